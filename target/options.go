package target

import (
	"fmt"
	"math"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pikit-go/pikit/method"
)

// Provider options shared by the network targets.
const (
	// OptBaseURL overrides the API's base URL (the CLI's --base-url and the
	// config's [target] base_url).
	OptBaseURL = "base_url"
	// OptMaxTokens caps the reply's tokens when a request sets no
	// MaxTokens.
	OptMaxTokens = "max_tokens"
)

// networkOptions are the options of the providers that speak the OpenAI
// Chat Completions wire format.
var networkOptions = []method.Option{
	{Name: OptBaseURL, Help: "the API's base URL (default: the provider's environment variable, else its default)", Default: ""},
	{Name: OptMaxTokens, Help: "the most tokens a reply may have when a request sets none (0: the API's default)", Default: 0},
	{Name: OptMaxResponseBytes, Help: "the largest response body read, in bytes", Default: DefaultMaxResponseBytes},
}

// refusedOptions are option names that would put a credential in a
// config file. Keys come from the environment or a .env file only.
var refusedOptions = []string{"api_key", "apikey", "key", "token", "auth_token", "access_token", "secret", "password", "authorization", "x-api-key"}

// checkOptions returns an error for a refused or unknown option, naming
// the valid ones. Open prefixes the errors of a provider with the spec.
func checkOptions(opts Options, valid ...string) error {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if slices.Contains(refusedOptions, strings.ToLower(k)) {
			return fmt.Errorf("option %q is refused: API keys come from the environment or a .env file, never from a config file or flag", k)
		}
		if !slices.Contains(valid, k) {
			return fmt.Errorf("unknown option %q; valid options: %s", k, strings.Join(valid, ", "))
		}
	}
	return nil
}

// stringOption returns a string option, "" when it is not set.
func stringOption(opts Options, name string) (string, error) {
	v, ok := opts[name]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("option %s is %v (%T), want a string", name, v, v)
	}
	return strings.TrimSpace(s), nil
}

// positiveIntOption returns a positive integer option, 0 when it is not
// set. Config files give int64 (TOML) or float64 (JSON); flags give strings.
func positiveIntOption(opts Options, name string) (int, error) {
	v, ok := opts[name]
	if !ok || v == nil {
		return 0, nil
	}
	var n int64
	bad := false
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	case uint:
		n = int64(x)
	case uint32:
		n = int64(x)
	case uint64:
		n, bad = int64(x), x > math.MaxInt32
	case float64:
		n, bad = int64(x), x != math.Trunc(x)
	case float32:
		n, bad = int64(x), float64(x) != math.Trunc(float64(x))
	case string:
		var err error
		n, err = strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		bad = err != nil
	default:
		bad = true
	}
	if bad || n <= 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("option %s is %v, want a positive whole number", name, v)
	}
	return int(n), nil
}

// resolveBaseURL picks the base URL: the option, else the environment
// variable, else the default; and checks it is an http(s) URL.
func resolveBaseURL(option, envVar, def string) (string, error) {
	base, from := option, "option "+OptBaseURL
	if base == "" {
		base, from = strings.TrimSpace(os.Getenv(envVar)), envVar
	}
	if base == "" {
		return def, nil
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s is %q, want an http:// or https:// URL", from, Redact(base))
	}
	return base, nil
}

// lookupKey reads an API key from the environment (which LoadDotEnv may
// have filled from a .env file).
func lookupKey(envVar string) (string, error) {
	key := strings.TrimSpace(os.Getenv(envVar))
	if key == "" {
		return "", fmt.Errorf("%w: set %s in the environment or in a .env file in the working directory", ErrMissingKey, envVar)
	}
	return key, nil
}
