package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"switchboard/internal/domain"
)

// pathID reads the integer id in the path segment name: the one parser of
// every integer id in a path (webhooks, deliveries, recover jobs, templates,
// scheduled messages, messages). Ids are positive integers; a segment that
// is not one (a word, zero, a negative or too large number) names no
// object, so it gets the answer an unknown id gets, 404 not_found, whatever
// else the path holds and in whatever order the rest is checked. The
// message names the expected shape. (A call id is another shape, unix
// seconds dot sequence, and the spec makes a malformed one 400: the calls
// service parses it.)
func pathID(r *http.Request, name, what string) (int64, error) {
	v := r.PathValue(name)
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return 0, domain.Errorf(domain.NotFound, "%s not found: %s ids are positive integers; got %q", what, what, v)
	}
	return id, nil
}

// pathParams names the parameters of a route's path, in order:
// "/sms/lines/{line}/blocked/{number}" has line and number.
func pathParams(path string) []string {
	var names []string
	for seg := range strings.SplitSeq(path, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			names = append(names, strings.TrimSuffix(strings.TrimSuffix(name, "}"), "..."))
		}
	}
	return names
}

// pathText checks r's path parameters, named by names, before any handler
// reads one: a NUL character in any of them is 400 naming it, an id's as
// much as a phone number's or a draft's name (nulIn).
func pathText(r *http.Request, names []string) error {
	for _, name := range names {
		if strings.IndexByte(r.PathValue(name), 0) >= 0 {
			return nulIn("path parameter " + name)
		}
	}
	return nil
}
