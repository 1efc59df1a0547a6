package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"switchboard/internal/domain"
)

// defaultBodyLimit caps request bodies of endpoints that do not set their own.
const defaultBodyLimit = 1 << 20

// decodeJSON strictly decodes the request body into dst: unknown fields,
// trailing data, wrong types and unparseable JSON are 400 invalid_request, and
// a body over limit is 413. An empty body is allowed only when optional is true.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any, limit int64, optional bool) error {
	body := http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if errors.Is(err, io.EOF) {
			if optional {
				return nil
			}
			return domain.Errorf(domain.Invalid, "request body is required")
		}
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return decodeError(err)
		}
		return domain.Errorf(domain.Invalid, "request body has data after the JSON value")
	}
	return nil
}

func decodeError(err error) error {
	var tooBig *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &tooBig):
		return &domain.Error{Code: domain.Invalid, Message: fmt.Sprintf("request body exceeds %d bytes", tooBig.Limit), Status: http.StatusRequestEntityTooLarge}
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return domain.Errorf(domain.Invalid, "request body must be a JSON %s", jsonKind(typeErr.Type.Kind().String()))
		}
		return domain.Errorf(domain.Invalid, "field %s must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return domain.Errorf(domain.Invalid, "request body is not valid JSON")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return domain.Errorf(domain.Invalid, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return domain.Errorf(domain.Invalid, "request body is not valid JSON")
}

func jsonKind(goKind string) string {
	switch goKind {
	case "struct", "map":
		return "an object"
	case "slice", "array":
		return "an array"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "float32", "float64":
		return "a number"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	}
	return "a " + goKind
}
