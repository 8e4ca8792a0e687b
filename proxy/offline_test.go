package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/target/obedient"
)

// offlineDrive is a cell whose target is mock:obedient: the proxy answers
// the agent itself.
func offlineDrive() matrix.Drive {
	d := newDrive("mock:obedient")
	d.Target = obedient.Model{}
	return d
}

// TestOfflineTarget: with mock:obedient the proxy answers in the agent's
// own format, streamed or not, and a whole agent loop through it ends with
// the sink call the tainted tool result asks for.
func TestOfflineTarget(t *testing.T) {
	for _, w := range wires {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", w.name, stream), func(t *testing.T) {
				srv, hs := newProxy(t, "")
				s := mustOpen(t, srv, "off", offlineDrive(), sinkRules())
				url := w.baseFor(hs.URL, "off") + w.agentPath
				// runAgent decodes each answer as a client of the format
				// would, and fails on one it could not read (a stream
				// without [DONE], response.completed or message_stop).
				answers, err := runAgent(t.Context(), http.DefaultClient, w, url, stream, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(answers) != 3 || len(answers[0].calls) != 1 || answers[0].calls[0].name != "read_inbox" ||
					len(answers[1].calls) != 1 || answers[1].calls[0].name != "send_email" {
					t.Fatalf("answers %+v: want read_inbox, send_email, a final text", answers)
				}
				var args map[string]any
				if err := json.Unmarshal([]byte(answers[1].calls[0].args), &args); err != nil || args["to"] != attacker {
					t.Errorf("send_email arguments %s (%v)", answers[1].calls[0].args, err)
				}
				if answers[2].text == "" {
					t.Error("no final text")
				}
				tr := s.Trace()
				if got, want := stepKinds(tr), "user model tool* model tool! model"; got != want {
					t.Fatalf("steps %q, want %q", got, want)
				}
				if len(tr.SinkCalls) != 1 || tr.SinkCalls[0].Arguments["to"] != attacker || !tr.TaintDelivered || tr.ModelCalls != 3 {
					t.Errorf("sink calls %+v, taint delivered %v, model calls %d", tr.SinkCalls, tr.TaintDelivered, tr.ModelCalls)
				}
				if tr.FinalText != answers[2].text {
					t.Errorf("final text %q, the agent read %q", tr.FinalText, answers[2].text)
				}
			})
		}
	}
}

// TestOfflineBenign: the baseline cell of the same agent fires no sink.
func TestOfflineBenign(t *testing.T) {
	w := wireNamed("chat")
	srv, hs := newProxy(t, "")
	d := offlineDrive()
	d.Benign, d.Payload, d.Delivery = true, "", ""
	s := mustOpen(t, srv, "benign", d, sinkRules())
	if _, err := runAgent(t.Context(), http.DefaultClient, w, w.baseFor(hs.URL, "benign")+w.agentPath, true, nil); err != nil {
		t.Fatal(err)
	}
	if tr := s.Trace(); len(tr.SinkCalls) != 0 || tr.TaintDelivered || stepKinds(tr) != "user model tool model" {
		t.Errorf("steps %s, sink calls %+v", stepKinds(tr), tr.SinkCalls)
	}
}

// TestOfflineAnswerShape: the whole answers carry what SDKs check: the
// agent's model, the object type, a stop reason.
func TestOfflineAnswerShape(t *testing.T) {
	cases := map[string]string{
		"chat":      `"object":"chat.completion"`,
		"responses": `"object":"response"`,
		"anthropic": `"type":"message"`,
	}
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			srv, hs := newProxy(t, "")
			mustOpen(t, srv, "shape", offlineDrive(), sinkRules())
			resp, body, err := post(t, w.baseFor(hs.URL, "shape")+w.agentPath, w.encode(w.model, false, []msg{{role: "user", text: userText}}), nil)
			if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%v %v %s", resp, err, body)
			}
			if !strings.Contains(string(body), cases[w.name]) || !strings.Contains(string(body), `"model":"`+w.model+`"`) {
				t.Errorf("answer %s: want %s and the agent's model %s", body, cases[w.name], w.model)
			}
		})
	}
}

// TestOfflinePassThrough: an offline target serves only model requests;
// anything else is refused, and counted.
func TestOfflinePassThrough(t *testing.T) {
	srv, hs := newProxy(t, "")
	s := mustOpen(t, srv, "off", offlineDrive(), sinkRules())
	resp, err := http.Get(hs.URL + "/s/off/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || s.Passed() != 1 || srv.Stats().Passed != 1 {
		t.Errorf("status %d, passed %d / %+v", resp.StatusCode, s.Passed(), srv.Stats())
	}
}

// TestOfflineRefusesUpstream: an offline target cannot take an upstream.
func TestOfflineRefusesUpstream(t *testing.T) {
	srv := &Server{BaseURL: "http://127.0.0.1:9/v1"}
	if _, err := srv.Open("x", offlineDrive(), sinkRules()); err == nil || !strings.Contains(err.Error(), "offline") {
		t.Errorf("err %v, want one saying the target is offline", err)
	}
}
