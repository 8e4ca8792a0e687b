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
)

// secretWords mark a variable name as holding a credential when one of
// them is a word of the name (words are split at '_', '-' and '.').
var secretWords = map[string]bool{
	"KEY": true, "KEYS": true, "APIKEY": true, "TOKEN": true, "TOKENS": true,
	"SECRET": true, "SECRETS": true, "PASSWORD": true, "PASSWD": true, "PASS": true,
	"CREDENTIAL": true, "CREDENTIALS": true, "AUTH": true, "PRIVATE": true,
	"COOKIE": true, "BEARER": true, "SIGNATURE": true,
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

// Filter returns environ ("NAME=value" entries, as os.Environ gives) with
// every Secret variable left out unless its name is in pass, then extra
// appended (extra wins over environ, as os/exec keeps the last of a name).
// dropped lists the names left out, sorted, for a notice; never values.
func Filter(environ, pass, extra []string) (env, dropped []string) {
	passed := make(map[string]bool, len(pass))
	for _, p := range pass {
		passed[p] = true
	}
	env = make([]string, 0, len(environ)+len(extra))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if name != "" && Secret(name) && !passed[name] {
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
