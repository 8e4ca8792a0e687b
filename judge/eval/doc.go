// Package eval measures a judge against people. A labelled-replies file
// holds one JSON object a line: a model's reply with the trace it came from
// (or the few parts of it a judge reads), the attacker's task, and the
// outcome a person gave it with their reason. Read parses and checks such
// a file, naming the line at fault; Evaluate runs a judge over the records
// and scores its verdicts against the labels: precision, recall and F1 for
// success with Wilson intervals, agreement on the outcome, the confusion
// matrix over outcomes, and every record on which the judge and the label
// differ.
package eval
