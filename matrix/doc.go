// Package matrix turns an experiment config into cells and cells into
// results. A Config (TOML, flat or sectioned, the Python pikit's keys) names
// the attacks, defenses, channels and agents to cross; Plan expands them
// into Cells, each a value with a stable Key; a Runner executes cells with N
// workers — craft the payload, run the agent against the target, judge the
// trace — and hands each Result to a sink as it completes.
package matrix
