package mcpserver

// SessionIDs is the set of the sessions open now.
func (s *Server) SessionIDs() map[string]bool {
	ids := map[string]bool{}
	for ss := range s.srv.Sessions() {
		ids[ss.ID()] = true
	}
	return ids
}
