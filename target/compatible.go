package target

import (
	"fmt"

	"github.com/pikit-go/pikit/method"
)

// Environment variables of the OpenAI-compatible aliases.
const (
	CompatibleKeyEnv     = "OPENAI_COMPATIBLE_API_KEY" // optional
	CompatibleBaseURLEnv = "OPENAI_COMPATIBLE_BASE_URL"
	VLLMKeyEnv           = "VLLM_API_KEY" // optional: vllm serve --api-key
	VLLMBaseURLEnv       = "VLLM_BASE_URL"
)

// DefaultLocalBaseURL is where a local OpenAI-compatible server (vLLM,
// llama.cpp's server, LM Studio) listens by default.
const DefaultLocalBaseURL = "http://localhost:8000/v1/"

func init() {
	for _, p := range []struct{ name, keyEnv, baseEnv, what string }{
		{"openai_compatible", CompatibleKeyEnv, CompatibleBaseURLEnv, "any server that speaks the OpenAI Chat Completions API (vLLM, llama.cpp, LM Studio, a gateway)"},
		{"vllm", VLLMKeyEnv, VLLMBaseURLEnv, "a vLLM server (vllm serve MODEL)"},
	} {
		Register(Provider{
			Name: p.name,
			Description: fmt.Sprintf("%s (%s:<model>); base URL from option base_url, else %s, else %s; key optional (%s)",
				p.what, p.name, p.baseEnv, DefaultLocalBaseURL, p.keyEnv),
			Options: networkOptions,
			Open: func(model string, opts Options) (Target, error) {
				return openOpenAICompatible(openAISettings{
					provider: p.name, keyEnv: p.keyEnv, keyDefault: "none",
					baseURLEnv: p.baseEnv, baseURL: DefaultLocalBaseURL,
				}, model, opts)
			},
			KeyEnv:         p.keyEnv,
			KeyOptional:    true,
			BaseURLEnv:     p.baseEnv,
			DefaultBaseURL: DefaultLocalBaseURL,
		})
	}
}

// unservedProviders are provider names the Python pikit knows that pikit
// reaches another way: the message says which.
var unservedProviders = map[string]string{
	"hf":          "pikit does not load Hugging Face models in-process; serve the model with an OpenAI-compatible server (vllm serve MODEL, llama.cpp's llama-server, or Ollama) and use vllm:MODEL, openai_compatible:MODEL or ollama:MODEL",
	"huggingface": "pikit does not load Hugging Face models in-process; serve the model with an OpenAI-compatible server (vllm serve MODEL, llama.cpp's llama-server, or Ollama) and use vllm:MODEL, openai_compatible:MODEL or ollama:MODEL",
}

// unservedError is the error for a provider pikit reaches another way.
type unservedError struct{ name, msg string }

func (e *unservedError) Error() string { return fmt.Sprintf("target provider %q: %s", e.name, e.msg) }

// Is makes the error match method.ErrUnknown, as an unknown provider does.
func (e *unservedError) Is(target error) bool { return target == method.ErrUnknown }
