package proxy

import "github.com/pikit-go/pikit/matrix"

// Check reports, before anything runs, whether the server can send the
// requests of a config's cells anywhere: its target spec parses, and an
// upstream given on the command line meets a provider that sends requests.
func (srv *Server) Check(cfg *matrix.Config) error {
	_, err := srv.upstream(cfg)
	return err
}
