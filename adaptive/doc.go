// Package adaptive searches for an injection that lands, where the attack
// package words one once. A search proposes a candidate, the runner tries
// it on the cell's target (same agent, channel, defense and judge), and the
// verdict and the target's answer steer the next candidate, until one
// succeeds or a limit (rounds, tokens, the run's budget) ends the search.
//
// The strategies: pair and tree ask an attacker model (any target; the
// offline mock:attacker is defined here) to refine candidates from the
// verdicts, tree growing a pruned tree of them; best_of_n and greedy
// compose pikit's own transforms (attacks, encodings, paraphrases, random
// suffixes, placements in the carrier) with a seeded random source and no
// attacker model; crescendo escalates over several turns of one
// conversation (direct injection) or spreads the payload over several tool
// results (indirect). Every attempt is recorded as an agent.Round, so a
// result shows each round's prompt, answer and verdict, and the winning
// injection can be rerun as a fixed case.
package adaptive
