package conformance

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/pikit-go/pikit/proxy"
	"github.com/pikit-go/pikit/target"
)

// answers are what a local target behind pikit says, for the SDKs to read
// back from pikit's encoding of each wire format, streamed and not.
var answers = map[string]target.Response{
	"text":            {Text: "Here is the summary: ünïcödé 🙂, \"quotes\" and a\nnew line."},
	"calls":           {ToolCalls: []target.ToolCall{{ID: "call_1", Name: "read_email", Arguments: `{"folder":"inbox","limit":3}`}, {ID: "call_2", Name: "send_email", Arguments: `{"to":"x@example.com","body":"hi"}`}}},
	"text and a call": {Text: "Sending it now.", ToolCalls: []target.ToolCall{{ID: "call_3", Name: "send_email", Arguments: `{"to":"a@b.example","body":"long body with text"}`}}},
}

// serve answers with resp as pikit's model handler does for a local
// target (mock:obedient behind pikit proxy, pikit proxy serve's offline
// model).
func serve(t *testing.T, resp target.Response) string {
	t.Helper()
	srv := httptest.NewServer(proxy.ModelHandler(target.NewScripted(resp)))
	t.Cleanup(srv.Close)
	return srv.URL
}

// said is what an answer says, as pikit compares it: text and tool calls
// (name and arguments as a JSON value: Anthropic's format carries them as
// an object, whose keys may come in another order; ids are the encoder's
// own in some formats).
type said struct {
	Text  string
	Calls [][2]string
}

func saidOf(r target.Response) said {
	s := said{Text: r.Text}
	for _, c := range r.ToolCalls {
		s.Calls = append(s.Calls, [2]string{c.Name, canonical(c.Arguments)})
	}
	return s
}

// canonical writes JSON text with its object keys in order; other text
// stays as it is.
func canonical(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestChatAnswersReadBySDK: openai-go reads pikit's Chat Completions
// answers, whole and streamed (its accumulator), as pikit meant them.
func TestChatAnswersReadBySDK(t *testing.T) {
	for name, resp := range answers {
		for _, stream := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "", true: "/stream"}[stream], func(t *testing.T) {
				c := openai.NewClient(option.WithBaseURL(serve(t, resp)+"/v1/"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
				params := openai.ChatCompletionNewParams{Model: "gpt-conf", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
				var msg openai.ChatCompletionMessage
				if stream {
					s := c.Chat.Completions.NewStreaming(context.Background(), params)
					acc := openai.ChatCompletionAccumulator{}
					for s.Next() {
						acc.AddChunk(s.Current())
					}
					if err := s.Err(); err != nil {
						t.Fatalf("openai-go stream: %v", err)
					}
					if len(acc.Choices) != 1 {
						t.Fatalf("%d choices", len(acc.Choices))
					}
					msg = acc.Choices[0].Message
				} else {
					cc, err := c.Chat.Completions.New(context.Background(), params)
					if err != nil {
						t.Fatalf("openai-go: %v", err)
					}
					msg = cc.Choices[0].Message
				}
				got := said{Text: msg.Content}
				for _, tc := range msg.ToolCalls {
					got.Calls = append(got.Calls, [2]string{tc.Function.Name, canonical(tc.Function.Arguments)})
				}
				if want := saidOf(resp); !reflect.DeepEqual(got, want) {
					t.Errorf("openai-go read %+v, want %+v", got, want)
				}
			})
		}
	}
}

// TestResponsesAnswersReadBySDK: openai-go reads pikit's Responses API
// answers, whole and streamed (up to response.completed), as pikit meant
// them.
func TestResponsesAnswersReadBySDK(t *testing.T) {
	for name, resp := range answers {
		for _, stream := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "", true: "/stream"}[stream], func(t *testing.T) {
				c := openai.NewClient(option.WithBaseURL(serve(t, resp)+"/v1/"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
				params := responses.ResponseNewParams{Model: "gpt-conf", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}
				var r responses.Response
				if stream {
					s := c.Responses.NewStreaming(context.Background(), params)
					completed := false
					for s.Next() {
						if ev := s.Current(); ev.Type == "response.completed" {
							r, completed = ev.AsResponseCompleted().Response, true
						}
					}
					if err := s.Err(); err != nil || !completed {
						t.Fatalf("openai-go stream: %v (response.completed seen: %v)", err, completed)
					}
				} else {
					got, err := c.Responses.New(context.Background(), params)
					if err != nil {
						t.Fatalf("openai-go: %v", err)
					}
					r = *got
				}
				got := said{Text: r.OutputText()}
				for _, item := range r.Output {
					if item.Type == "function_call" {
						got.Calls = append(got.Calls, [2]string{item.Name, canonical(item.Arguments.OfString)})
					}
				}
				if want := saidOf(resp); !reflect.DeepEqual(got, want) {
					t.Errorf("openai-go read %+v, want %+v", got, want)
				}
			})
		}
	}
}

// TestMessagesAnswersReadBySDK: anthropic-sdk-go reads pikit's Messages
// answers, whole and streamed (its Accumulate), as pikit meant them.
func TestMessagesAnswersReadBySDK(t *testing.T) {
	for name, resp := range answers {
		for _, stream := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "", true: "/stream"}[stream], func(t *testing.T) {
				c := anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithBaseURL(serve(t, resp)), aoption.WithAPIKey(testKey), aoption.WithMaxRetries(0))
				params := anthropic.MessageNewParams{Model: "claude-conf", MaxTokens: 100, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
				var msg anthropic.Message
				if stream {
					s := c.Messages.NewStreaming(context.Background(), params)
					for s.Next() {
						if err := msg.Accumulate(s.Current()); err != nil {
							t.Fatalf("Accumulate: %v", err)
						}
					}
					if err := s.Err(); err != nil {
						t.Fatalf("anthropic-sdk-go stream: %v", err)
					}
				} else {
					got, err := c.Messages.New(context.Background(), params)
					if err != nil {
						t.Fatalf("anthropic-sdk-go: %v", err)
					}
					msg = *got
				}
				if got, want := saidOf(fromSDKMessage(&msg)), saidOf(resp); !reflect.DeepEqual(got, want) {
					t.Errorf("anthropic-sdk-go read %+v, want %+v", got, want)
				}
			})
		}
	}
}
