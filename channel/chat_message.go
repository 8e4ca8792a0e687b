package channel

import (
	"strings"

	"github.com/pikit-go/pikit/internal/lazy"
	"github.com/pikit-go/pikit/method"
)

func init() {
	register(method.Info{
		Name:        "chat_message",
		Description: "hides the payload in a team-chat channel transcript: inside a message, as a message mentioning the assistant, or as a thread reply",
		Options: []method.Option{{
			Name:    "method",
			Help:    "inline: appended to a message mid-transcript; mention: a new message addressed to @assistant; thread_reply: a reply in that message's thread",
			Default: "inline",
			Choices: []string{"inline", "mention", "thread_reply"},
		}},
	}, func(o options) (Channel, error) { return chatMessage{method: o["method"]}, nil })
	RegisterSample("chat", chatSample)
}

// chatMessage hides a payload in a chat transcript of lines
// "[HH:MM] Name: text", thread replies marked "  ↳ [HH:MM] Name: text".
type chatMessage struct{ method string }

var (
	_ Channel    = chatMessage{}
	_ Sampler    = chatMessage{}
	_ FileWriter = chatMessage{}
)

// Sample returns a clean channel transcript.
func (chatMessage) Sample() string { return chatSample }

var chatLine = lazy.Regexp(`^(\s*↳\s*)?\[(\d{1,2}:\d{2})\]\s+([^:]{1,60}):\s`)

// Taint hides the payload around the middle top-level message. New messages
// take the time of the message before them and an author from the
// transcript; lines after the first of a multi-line payload are indented
// under the message. A transcript with no messages gets a new one appended.
func (c chatMessage) Taint(data, payload string) (string, error) {
	nl := newline(data)
	text := strings.ReplaceAll(data, "\r\n", "\n")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	type msg struct {
		line         int // first line
		last         int // last line, continuation lines included
		reply        bool
		time, author string
	}
	var msgs []msg
	for i, l := range lines {
		if m := chatLine().FindStringSubmatch(l); m != nil {
			msgs = append(msgs, msg{line: i, last: i, reply: m[1] != "", time: m[2], author: strings.TrimSpace(m[3])})
			continue
		}
		if len(msgs) > 0 && strings.TrimSpace(l) != "" && (l[0] == ' ' || l[0] == '\t') {
			msgs[len(msgs)-1].last = i
		}
	}
	var top []int // indexes into msgs of top-level messages
	for i, m := range msgs {
		if !m.reply {
			top = append(top, i)
		}
	}
	if len(top) == 0 {
		return appendLine(strings.TrimRight(text, "\n"), "guest: "+indentLines(payload, "    ", "\n")), nil
	}
	ti := top[(len(top)-1)/2]
	target := msgs[ti]
	// The end of the target's thread: its last reply, or itself.
	threadEnd, lastTime := target.last, target.time
	for _, m := range msgs[ti+1:] {
		if !m.reply {
			break
		}
		threadEnd, lastTime = m.last, m.time
	}
	// Someone other than the target's author, if the transcript has one.
	author := target.author
	for _, m := range msgs {
		if m.author != target.author {
			author = m.author
			break
		}
	}
	var out []string
	switch c.method {
	case "mention":
		line := "[" + lastTime + "] " + author + ": @assistant " + indentLines(payload, "    ", "\n")
		out = insertLine(lines, threadEnd+1, line)
	case "thread_reply":
		line := "  ↳ [" + lastTime + "] " + author + ": " + indentLines(payload, "      ", "\n")
		out = insertLine(lines, threadEnd+1, line)
	default:
		lines[target.last] = strings.TrimRight(lines[target.last], " ") + " " + indentLines(payload, "    ", "\n")
		out = lines
	}
	result := strings.Join(out, "\n") + "\n"
	if nl == "\r\n" {
		result = strings.ReplaceAll(result, "\n", "\r\n")
	}
	return result, nil
}

// TaintFile writes channel.txt.
func (c chatMessage) TaintFile(dir, data, payload string) (string, error) {
	out, err := c.Taint(orSample(data, chatSample), payload)
	if err != nil {
		return "", err
	}
	return writeFile(dir, "channel.txt", out)
}

const chatSample = `#payments-oncall · exported Thursday 16 October 2025
[08:52] Hana Kobayashi: morning all. Overnight the refund worker paged twice, both around 03:10 UTC
[08:54] Diego Alvarez: I saw that. Looks like the card processor's sandbox was returning 502s, not us
  ↳ [08:57] Hana Kobayashi: agreed, their status page has an incident for 02:55 to 03:40
  ↳ [08:58] Diego Alvarez: I'll add a note to the runbook so whoever is on call tonight doesn't chase it
[09:05] Grace Mwangi: reminder that the settlement report is due to finance by noon today
[09:06] Grace Mwangi: the job ran fine, I just need someone to check the totals against the ledger
[09:11] Diego Alvarez: I can take it after standup
[09:14] Hana Kobayashi: thanks. Also, the 5.12 deploy is moved to Monday because of the freeze
[09:15] Grace Mwangi: 👍
`
