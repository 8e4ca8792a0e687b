package mcpserve

import (
	"net/http"

	"github.com/pikit-go/pikit/internal/localhost"
)

// localOnly answers only requests that agents on this machine send, as
// pikit's proxy and web servers do: a request whose Host is not the
// server's own address (a name an attacker pointed at 127.0.0.1: DNS
// rebinding), one that a web page elsewhere sent (its Origin), and a
// cross-site load without an Origin get a 403 with a JSON-RPC error
// saying why, before their body is read. The server's own address is
// localhost, a loopback address or the address the request came in at,
// or one of hosts, at the port it came in at.
func localOnly(next http.Handler, hosts []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := localhost.Check(r, hosts, "this server"); err != nil {
			refuse(w, http.StatusForbidden, codeServerError, err.Error())
			return
		}
		next.ServeHTTP(w, r)
	})
}
