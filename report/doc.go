// Package report encodes and summarises results: JSONL, JSON and CSV
// writers and readers chosen by file extension, and summaries whose every
// rate carries a Wilson confidence interval.
package report
