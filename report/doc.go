// Package report encodes and summarises results: JSONL, JSON and CSV
// writers and readers chosen by file extension, and summaries whose every
// rate carries a Wilson confidence interval.
//
// Readers stream. Scan and ScanFile hand over each result as a Record (the
// fields summaries, comparisons and gates read), decoding nothing else, so
// a million-cell file is summarised in seconds and in memory that does not
// grow with it; Aggregator, Comparer and HTMLReport take Records one at a
// time. A file that is not pikit results, or a result whose verdict is
// not one, is an error naming its line.
//
// What the package writes for people is safe to show: text and Markdown
// summaries escape terminal control sequences in values from the results
// (Markdown its markup too), the HTML report escapes everything, bidi and
// control characters included, and loads nothing, and CSV cells a
// spreadsheet would run as formulas are neutralised unless asked not to.
// Every file it writes is a regular file, mode 0644 less the umask (see
// WriteFileAtomic); it never replaces a device, a FIFO or a directory.
package report
