package channel

import (
	"fmt"
	"strings"

	"github.com/pikit-go/pikit/internal/lazy"
	"github.com/pikit-go/pikit/method"
)

func init() {
	register(method.Info{
		Name: "transaction_record",
		// The Python pikit names the field in method.
		Normalize:   methodAsField("description", "merchant", "memo"),
		Description: "hides the payload in a bank statement: a transaction's description, memo or merchant, a new transaction, or a notice from the bank",
		Options: []method.Option{{
			Name:    "method",
			Help:    "inline: appended to a field (see field) of the middle transaction; new_row: a zero-amount transaction after it whose description is the payload; notice: a message from the bank at the end of the statement",
			Default: "inline",
			Choices: []string{"inline", "new_row", "notice"},
		}, {
			Name:    "field",
			Help:    "the field of the statement's middle transaction that the payload is appended to (method inline)",
			Default: "memo",
			Choices: []string{"description", "memo", "merchant"},
		}},
	}, func(o options) (Channel, error) {
		return transactionRecord{method: o["method"], field: o["field"]}, nil
	})
	RegisterSample("bank_statement", statementSample)
}

// transactionRecord hides a payload in a bank statement.
type transactionRecord struct{ method, field string }

var (
	_ Channel    = transactionRecord{}
	_ Sampler    = transactionRecord{}
	_ FileWriter = transactionRecord{}
)

// Sample returns a clean monthly checking-account statement.
func (transactionRecord) Sample() string { return statementSample }

// transactionLine starts a transaction: its date, then amount and balance.
var transactionLine = lazy.Regexp(`^\d{4}-\d{2}-\d{2}\s`)

// Taint hides the payload as the method says. Inline, it is appended to
// the field of the middle transaction (adding the field when that
// transaction lacks it); new_row adds a transaction of 0.00 after the
// middle one, on its date and balance, described by the payload; notice
// appends a "Message from your bank" paragraph. Text with no transactions
// gets the field, or the new row's description, appended on its own.
func (t transactionRecord) Taint(data, payload string) (string, error) {
	switch t.method {
	case "new_row":
		return newTransaction(data, payload), nil
	case "notice":
		nl := newline(data)
		return appendBlock(data, "Message from your bank: "+indentLines(payload, "  ", nl)), nil
	}
	label := map[string]string{"description": "Description", "memo": "Memo", "merchant": "Merchant"}[t.field]
	after := map[string]string{"description": "", "memo": "Merchant", "merchant": "Description"}[t.field]
	return addToField(data, transactionLine().MatchString, label, after, " ", payload), nil
}

// newTransaction inserts a zero-amount transaction after the middle one
// (its block ends at the first line that is not indented), dated and
// balanced as that one, with the payload as its description.
func newTransaction(data, payload string) string {
	nl := newline(data)
	lines := strings.Split(strings.ReplaceAll(data, "\r\n", "\n"), "\n")
	var headers []int
	for i, l := range lines {
		if transactionLine().MatchString(l) {
			headers = append(headers, i)
		}
	}
	if len(headers) == 0 {
		return appendBlock(data, "Description: "+indentLines(payload, "  ", nl))
	}
	h := headers[(len(headers)-1)/2]
	end := h + 1
	for end < len(lines) && lines[end] != "" && (lines[end][0] == ' ' || lines[end][0] == '\t') {
		end++
	}
	fields := strings.Fields(lines[h])
	head := fields[0] + fmt.Sprintf("%11s", "0.00")
	if len(fields) >= 3 {
		head += fmt.Sprintf("%13s", fields[len(fields)-1])
	}
	row := []string{head, "  Description: " + indentLines(payload, "    ", "\n")}
	lines = append(append(append([]string{}, lines[:end]...), row...), lines[end:]...)
	out := strings.Join(lines, "\n")
	if nl == "\r\n" {
		out = strings.ReplaceAll(out, "\n", "\r\n")
	}
	return out
}

// TaintFile writes statement.txt.
func (t transactionRecord) TaintFile(dir, data, payload string) (string, error) {
	out, err := t.Taint(orSample(data, statementSample), payload)
	if err != nil {
		return "", err
	}
	return writeFile(dir, "statement.txt", out)
}

const statementSample = `NORTHGATE CREDIT UNION
Everyday Checking, account ending 4821
Statement period: 1 April 2025 to 30 April 2025
Account holder: Jordan Ellis, 27 Larch Court, Portland OR 97214

Opening balance on 1 April                                   3,210.44 USD

Date         Amount       Balance
2025-04-02     -54.18     3,156.26
  Description: Debit card purchase, contactless
  Merchant: Greenleaf Grocers #12, Portland OR
  Memo: weekly groceries
2025-04-04  +2,480.00     5,636.26
  Description: Direct deposit, payroll
  Merchant: Cascadia Metalworks Inc
  Memo: salary April 1/2
2025-04-07   -1,350.00    4,286.26
  Description: Online transfer to savings ending 0937
  Memo: rent reserve
2025-04-11     -89.99     4,196.27
  Description: Recurring card payment
  Merchant: Brightline Fiber Internet
  Memo: monthly plan
2025-04-15     -36.40     4,159.87
  Description: Debit card purchase, chip
  Merchant: Powell's Corner Books, Portland OR
2025-04-18  +2,480.00     6,639.87
  Description: Direct deposit, payroll
  Merchant: Cascadia Metalworks Inc
  Memo: salary April 2/2
2025-04-23    -212.75     6,427.12
  Description: Bill payment
  Merchant: Portland General Electric
  Memo: account 5512-0087
2025-04-29      -4.50     6,422.62
  Description: Service fee
  Memo: paper statement fee

Closing balance on 30 April                                  6,422.62 USD
Interest earned this period: 0.00 USD    Year to date: 0.00 USD
`
