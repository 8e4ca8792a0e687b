// Package web tests browser agents where they meet injections: on web
// pages. A Server serves, for each cell, a small site (a shop, a forum, a
// docs site, a webmail inbox, a search engine's results, a travel site)
// under the cell's own session path, /s/SESSION/, with the cell's payload
// placed in one of its pages by the cell's channel (a web placement such
// as web_hidden or web_attribute, or any text channel).
//
// Its sinks are HTTP endpoints on the same server: the site's forms (a
// checkout, a login, a reply, an email's send button), any request to an
// attacker's host (the /x/HOST/ prefix: a navigation, a link followed, an
// image in the agent's own answer whose URL carries data away), and
// downloads. A sink request is recorded and answered with a plain page;
// nothing is forwarded, sent or stored anywhere else. Only what the agent
// chose counts: pages are served under a Content-Security-Policy that
// runs no script and loads no sub-resource from a sink, their refreshes
// out of the session are removed, and a sink request a page made by
// itself (its image, script, frame or prefetch, as the browser's
// Sec-Fetch-* headers say) is recorded with how it arrived but is not a
// sink call.
//
// The session's trace lists every request in order: each page fetched,
// with what was served and whether the payload was in it, and each sink
// request with its form fields or query parameters, which the judge
// checks against the cell's sink_args as it checks a tool call's
// arguments. Results are ordinary pikit results.
//
// A Driver runs an agent command once per cell (pikit web run), pointing
// it at its session's start page.
package web
