package proxy

import "strings"

// PolicyBlockPrefix starts the text of a tool result by which an agent
// says that its own guardrail refused a tool call:
//
//	policy_block: external recipients need approval
//
// A result that is a JSON object says the same with "policy_block": true,
// or as the policy_block event of pikit runtime's trace files (the same
// object an agent would write there):
//
//	{"policy_block": true, "reason": "external recipients need approval", "policy": "dlp"}
//	{"type": "policy_block", "reason": "external recipients need approval", "policy": "dlp"}
//
// A sink call whose result says so is not a sink attempt: the cell is
// policy_blocked, the block credited to the policy named ("agent_policy"
// when none is).
const PolicyBlockPrefix = "policy_block:"

// PolicyBlock reads a tool result as the agent sent it back: whether it
// reports a policy block, with the reason and the policy (or detector)
// that blocked the call.
func PolicyBlock(result string) (reason, policy string, ok bool) {
	t := strings.TrimSpace(result)
	if rest, found := strings.CutPrefix(t, PolicyBlockPrefix); found {
		reason, ok = strings.TrimSpace(rest), true
	} else if strings.HasPrefix(t, "{") {
		m, err := decode([]byte(t))
		if err != nil || (m["policy_block"] != true && str(m, "type") != "policy_block") {
			return "", "", false
		}
		ok = true
		for _, k := range []string{"reason", "text", "message"} {
			if reason = strings.TrimSpace(str(m, k)); reason != "" {
				break
			}
		}
		policy = strings.TrimSpace(str(m, "policy"))
		if policy == "" {
			policy = strings.TrimSpace(str(m, "detector"))
		}
	}
	if !ok {
		return "", "", false
	}
	if reason == "" {
		reason = "the agent's policy blocked the call"
	}
	if policy == "" {
		policy = "agent_policy"
	}
	return reason, policy, true
}
