package target

import (
	"os"
	"strings"
)

// Endpoint is where a target spec sends its requests, and with which key,
// worked out without opening it: what `--dry-run` and `dataset show` print
// so a user sees every host a run will contact before it does.
type Endpoint struct {
	Spec string
	// URL is the base URL requests go to; "" for an offline target.
	URL string
	// From says where URL came from: "option base_url", the provider's
	// environment variable, or "default".
	From string
	// KeyEnv is the variable whose key is sent with every request, ""
	// when none is (an offline target, or an optional key that is unset).
	KeyEnv string
	// BaseURLEnv is the provider's variable that moves URL ("" offline).
	BaseURLEnv string
}

// Offline reports whether the target sends nothing over the network.
func (e Endpoint) Offline() bool { return e.URL == "" }

// EndpointOf resolves the endpoint of a spec with its options, as the
// provider would when opened: the base_url option, else the provider's
// base URL variable, else its default. The URL is shown with any password
// in it redacted.
func EndpointOf(spec string, opts Options) (Endpoint, error) {
	e, err := endpointOf(spec, opts)
	e.URL = Redact(e.URL)
	return e, err
}

// BaseURLOf returns the base URL a spec's requests go to, as EndpointOf
// resolves it but unredacted: for sending, never for display. It is ""
// for an offline target.
func BaseURLOf(spec string, opts Options) (string, error) {
	e, err := endpointOf(spec, opts)
	return e.URL, err
}

func endpointOf(spec string, opts Options) (Endpoint, error) {
	name, _, err := ParseSpec(spec)
	if err != nil {
		return Endpoint{}, err
	}
	p, _ := provider(name)
	e := Endpoint{Spec: spec}
	if p.DefaultBaseURL == "" {
		return e, nil
	}
	e.URL, e.From, e.BaseURLEnv = p.DefaultBaseURL, "default", p.BaseURLEnv
	if v := strings.TrimSpace(os.Getenv(p.BaseURLEnv)); v != "" {
		e.URL, e.From = v, p.BaseURLEnv
	}
	if v, _ := stringOption(opts, OptBaseURL); v != "" {
		e.URL, e.From = v, "option "+OptBaseURL
	}
	if p.KeyEnv != "" && (!p.KeyOptional || strings.TrimSpace(os.Getenv(p.KeyEnv)) != "") {
		e.KeyEnv = p.KeyEnv
	}
	return e, nil
}

// EnvSecrets returns the API keys set in the environment for every
// registered provider (a .env file loaded by LoadDotEnv included): the
// values pikit must never write, even when a model echoes one back.
// Values shorter than Redact's minimum are left out, as Redact leaves them.
func EnvSecrets() []string {
	var out []string
	for _, p := range Providers() {
		if p.KeyEnv == "" {
			continue
		}
		if v := strings.TrimSpace(os.Getenv(p.KeyEnv)); len(v) >= minSecretLen {
			out = append(out, v)
		}
	}
	return out
}

// BaseURLEnvs returns the base URL variables of the registered providers.
func BaseURLEnvs() []string {
	var out []string
	for _, p := range Providers() {
		if p.BaseURLEnv != "" {
			out = append(out, p.BaseURLEnv)
		}
	}
	return out
}
