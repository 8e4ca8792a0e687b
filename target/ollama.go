package target

// Environment variables the ollama provider reads.
const (
	OllamaKeyEnv     = "OLLAMA_API_KEY" // optional: a local server needs none
	OllamaBaseURLEnv = "OLLAMA_BASE_URL"
)

// DefaultOllamaBaseURL is the OpenAI-compatible endpoint of a local Ollama
// server.
const DefaultOllamaBaseURL = "http://localhost:11434/v1/"

func init() {
	Register(Provider{
		Name: "ollama",
		Description: "a local Ollama server through its OpenAI-compatible API (ollama:<model>, e.g. ollama:llama3.2); base URL from option base_url, else " +
			OllamaBaseURLEnv + ", else " + DefaultOllamaBaseURL + "; key optional (" + OllamaKeyEnv + ")",
		Options: networkOptions,
		Open: func(model string, opts Options) (Target, error) {
			return openOpenAICompatible(openAISettings{
				provider:        "ollama",
				keyEnv:          OllamaKeyEnv,
				keyDefault:      "ollama", // the SDK sends some bearer token; Ollama ignores it
				baseURLEnv:      OllamaBaseURLEnv,
				baseURL:         DefaultOllamaBaseURL,
				legacyMaxTokens: true,
			}, model, opts)
		},
		KeyEnv:         OllamaKeyEnv,
		KeyOptional:    true,
		BaseURLEnv:     OllamaBaseURLEnv,
		DefaultBaseURL: DefaultOllamaBaseURL,
	})
}
