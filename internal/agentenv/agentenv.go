// Package agentenv builds the environment of an agent process that pikit
// starts (pikit proxy run, pikit mcp run): the user's environment without
// its secrets. An agent is someone else's code talking to a model that may
// be under an attacker's influence; a tracing exporter, a plugin or a
// client that ignores the base URL pikit gives it must not find the user's
// API keys, cloud credentials or tokens there. A variable the user names
// (--pass-env NAME) is passed as it is.
package agentenv

import (
	"sort"
	"strings"

	"github.com/pikit-go/pikit/internal/lazy"
)

// secretWords mark a variable name as holding a credential when one of
// them is a word of the name (words are split at '_', '-' and '.').
var secretWords = map[string]bool{
	"KEY": true, "KEYS": true, "APIKEY": true, "TOKEN": true, "TOKENS": true,
	"SECRET": true, "SECRETS": true, "PASSWORD": true, "PASSWD": true, "PASS": true,
	"CREDENTIAL": true, "CREDENTIALS": true, "AUTH": true, "PRIVATE": true,
	"COOKIE": true, "BEARER": true, "SIGNATURE": true, "AUTHORIZATION": true,
}

// secretPrefixes mark whole families of cloud and service credentials.
var secretPrefixes = []string{
	"AWS_", "AZURE_", "GOOGLE_", "GCLOUD_", "GCP_", "CLOUDSDK_", "ARM_",
	"OPENAI_", "ANTHROPIC_", "HF_", "HUGGING", "COHERE_", "MISTRAL_", "GROQ_",
	"GEMINI_", "DEEPSEEK_", "OPENROUTER_", "TOGETHER_", "FIREWORKS_", "XAI_",
	"VLLM_", "OLLAMA_", "LANGCHAIN_", "LANGSMITH_", "WANDB_", "GITHUB_TOKEN",
	"GH_", "GITLAB_", "NPM_TOKEN", "PYPI_", "TWINE_", "DOCKER_AUTH", "SLACK_",
	"STRIPE_", "SENTRY_", "DATABASE_URL", "PGPASS", "MYSQL_", "REDIS_URL",
	"SSH_AUTH_SOCK", "KUBECONFIG", "VAULT_",
}

// keep are names that look like secrets by the rules above but are part
// of an ordinary environment.
var keep = map[string]bool{
	"PWD": true, "OLDPWD": true, "GPG_TTY": true,
}

// Secret reports whether an environment variable's name marks it as a
// credential, or the means to reach one: API keys and tokens, cloud
// provider families (AWS_*, AZURE_*, GOOGLE_*), model providers' own
// variables (OPENAI_*, ANTHROPIC_* — their base URLs included, so a
// redirected endpoint does not follow either), an ssh agent socket, a
// kubeconfig. It errs on the side of dropping: an agent that needs one of
// them gets it by name.
func Secret(name string) bool {
	u := strings.ToUpper(name)
	if keep[u] || strings.HasSuffix(u, "CA_BUNDLE") || strings.Contains(u, "CA_CERT") {
		return false // a certificate authority's bundle is public
	}
	for _, p := range secretPrefixes {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	for _, w := range strings.FieldsFunc(u, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		if secretWords[w] {
			return true
		}
	}
	return strings.HasSuffix(u, "APIKEY") || strings.HasSuffix(u, "_KEY") || strings.Contains(u, "TOKEN") ||
		strings.Contains(u, "SECRET") || strings.Contains(u, "PASSWORD")
}

// credentialShape finds a credential by its form wherever it is in a
// value: a URL whose user info carries a password (a DSN, a proxy URL), a
// JSON Web Token (its header and claims are base64 JSON: "eyJ"), a
// private key in PEM.
var credentialShape = lazy.Regexp(`[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:[^\s/?#@]+@|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.|-----BEGIN [A-Z ]*PRIVATE KEY-----`)

// tokenShape finds a token by its issuer's prefix, at the start of a word:
// OpenAI and Anthropic keys, AWS access key ids, GitHub, GitLab, Slack,
// Hugging Face, Google, Stripe, npm, PyPI, Groq and xAI tokens.
var tokenShape = lazy.Regexp(`(?:^|[^A-Za-z0-9])(` + strings.Join([]string{
	`sk-ant-[A-Za-z0-9_-]{20,}`, `sk-[A-Za-z0-9_-]{20,}`,
	`(?:AKIA|ASIA)[0-9A-Z]{16}(?:[^A-Za-z0-9]|$)`,
	`gh[pousr]_[A-Za-z0-9]{30,}`, `github_pat_[A-Za-z0-9_]{30,}`, `glpat-[A-Za-z0-9_-]{20,}`,
	`xox[abposre]-[A-Za-z0-9-]{10,}`, `xapp-[A-Za-z0-9-]{10,}`,
	`hf_[A-Za-z0-9]{30,}`, `AIza[0-9A-Za-z_-]{35}`, `[sr]k_(?:live|test)_[0-9A-Za-z]{16,}`,
	`npm_[A-Za-z0-9]{36}`, `pypi-[A-Za-z0-9_-]{50,}`, `gsk_[A-Za-z0-9]{40,}`, `xai-[A-Za-z0-9]{40,}`,
}, "|") + `)`)

// SecretValue reports whether a value is shaped like a credential,
// whatever names it: a URL with a password in it, a JSON Web Token, a
// private key, or a token with a well-known prefix (sk-, sk-ant-, AKIA,
// ghp_, xoxb-, …) and the mix of letters and digits of a random one (a
// path such as /opt/sk-learn-models is not).
func SecretValue(v string) bool {
	if credentialShape().MatchString(v) {
		return true
	}
	for _, m := range tokenShape().FindAllStringSubmatch(v, -1) {
		if strings.ContainsAny(m[1], "0123456789") && strings.IndexFunc(m[1], isLetter) >= 0 {
			return true
		}
	}
	return false
}

func isLetter(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' }

// Filter returns environ ("NAME=value" entries, as os.Environ gives) with
// every Secret variable, and every variable whose value is a SecretValue,
// left out unless its name is in pass, then extra
// appended (extra wins over environ, as os/exec keeps the last of a name).
// dropped lists the names left out, sorted, for a notice; never values.
func Filter(environ, pass, extra []string) (env, dropped []string) {
	passed := make(map[string]bool, len(pass))
	for _, p := range pass {
		passed[p] = true
	}
	env = make([]string, 0, len(environ)+len(extra))
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if name != "" && (Secret(name) || SecretValue(value)) && !passed[name] {
			dropped = append(dropped, name)
			continue
		}
		env = append(env, kv)
	}
	sort.Strings(dropped)
	return append(env, extra...), dropped
}

// ValidName reports whether s can name an environment variable for
// --pass-env: letters, digits and underscores, not starting with a digit.
func ValidName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
