package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"switchboard/internal/domain"
)

// defaultBodyLimit caps request bodies of endpoints that do not set their own.
const defaultBodyLimit = 1 << 20

// decodeJSON strictly decodes the request body into dst: unknown fields,
// trailing data, wrong types and unparseable JSON are 400 invalid_request, and
// a body over limit is 413. An empty body is allowed only when optional is true.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any, limit int64, optional bool) error {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return decodeError(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
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
	// encoding/json matches field names case-insensitively; the API does not.
	return exactKeys(json.NewDecoder(bytes.NewReader(raw)), reflect.TypeOf(dst), "")
}

// exactKeys walks one JSON value and rejects object keys that are not
// exactly a json tag of the struct they decode into ("Message" is not
// "message"). t nil means any value.
func exactKeys(dec *json.Decoder, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return decodeError(err)
	}
	switch tok {
	case json.Delim('{'):
		var fields map[string]reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = jsonFields(t)
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return decodeError(err)
			}
			key, _ := k.(string)
			var ft reflect.Type
			if fields != nil {
				var ok bool
				if ft, ok = fields[key]; !ok {
					return domain.Errorf(domain.Invalid, "unknown field %q", path+key)
				}
			} else if t != nil && t.Kind() == reflect.Map {
				ft = t.Elem()
			}
			if err := exactKeys(dec, ft, path+key+"."); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := exactKeys(dec, et, fmt.Sprintf("%s[%d].", strings.TrimSuffix(path, "."), i)); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	if err != nil {
		return decodeError(err)
	}
	return nil
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

// jsonFields maps a struct's JSON names to field types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	fieldCache.Store(t, fields)
	return fields
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
			return domain.Errorf(domain.Invalid, "request body must be %s", jsonKind(typeErr.Type.Kind().String()))
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
