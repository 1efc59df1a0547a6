package httpapi

// Route is one public API route as the route table registers it, for the
// external tests that walk the table.
type Route struct {
	Method, Path string
	// Query is the query parameters the route takes.
	Query []string
	// Role is the role permission the route table checks, if any.
	Role string
}

// APIRoutes is s's route table of the public API, paths relative to Prefix.
func APIRoutes(s *Server) []Route {
	out := make([]Route, len(s.apiRoutes))
	for i, r := range s.apiRoutes {
		out[i] = Route{Method: r.method, Path: r.path, Query: r.query, Role: r.role}
	}
	return out
}
