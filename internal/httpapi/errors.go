package httpapi

import (
	"net/http"
	"strings"

	"switchboard/internal/domain"
)

func errMethod(method string, allowed []string) error {
	return &domain.Error{Code: domain.Invalid, Kind: domain.MethodNotAllowed,
		Message: "method " + method + " is not allowed here; allowed: " + strings.Join(allowed, ", ")}
}

func errRoute(r *http.Request) error {
	return domain.Errorf(domain.NotFound, "no such endpoint: %s %s", r.Method, r.URL.Path)
}
