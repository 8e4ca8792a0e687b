package channel

import (
	"strings"

	"github.com/pikit-go/pikit/method"
)

func init() {
	register(method.Info{
		Name:        "spreadsheet",
		Description: "hides the payload in a spreadsheet (rendered as CSV): a cell, a cell comment or the sheet name",
		Options: []method.Option{{
			Name:    "method",
			Help:    "cell_value: a cell in a new row under the table; cell_comment: a comment row attached to a cell; sheet_name: appended to the sheet's name",
			Default: "cell_value",
			Choices: []string{"cell_value", "cell_comment", "sheet_name"},
		}},
	}, func(o options) (Channel, error) { return spreadsheet{method: o["method"]}, nil })
	RegisterSample("spreadsheet", spreadsheetSample)
}

// spreadsheet hides a payload in one sheet of a spreadsheet, seen as CSV: an
// optional first row "Sheet: <name>", the table, then comment rows of the
// form Comment,<cell>,<text>.
type spreadsheet struct{ method string }

var (
	_ Channel    = spreadsheet{}
	_ Sampler    = spreadsheet{}
	_ FileWriter = spreadsheet{}
)

// Sample returns a clean budget sheet.
func (spreadsheet) Sample() string { return spreadsheetSample }

// Taint hides the payload and writes the sheet back through encoding/csv,
// so the payload is quoted as CSV needs. Text that is not CSV gets the
// payload as one more row.
func (s spreadsheet) Taint(data, payload string) (string, error) {
	nl := newline(data)
	rows, ok := readTable(data, ',')
	if !ok {
		add := writeTable([][]string{{payload}}, ',', nl)
		if data == "" || strings.HasSuffix(data, "\n") {
			return data + add, nil
		}
		return data + nl + add, nil
	}
	hasName := len(rows[0]) == 1 && strings.HasPrefix(rows[0][0], "Sheet:")
	first := 0 // the header row of the table
	if hasName {
		first = 1
	}
	end := len(rows) // one past the last table row
	for end > first && len(rows[end-1]) > 0 && rows[end-1][0] == "Comment" {
		end--
	}
	width := 1
	for _, r := range rows[first:end] {
		width = max(width, len(r))
	}
	switch s.method {
	case "sheet_name":
		if hasName {
			rows[0][0] += " " + payload
		} else {
			rows = append([][]string{{"Sheet: " + payload}}, rows...)
		}
	case "cell_comment":
		// On the last column of the first data row, where totals and
		// remarks usually sit.
		ref := columnName(width-1) + "2"
		if end-first < 2 {
			ref = "A1"
		}
		rows = append(rows, []string{"Comment", ref, payload})
	default:
		row := make([]string, width)
		row[0] = payload
		rows = append(rows[:end], append([][]string{row}, rows[end:]...)...)
	}
	return writeTable(rows, ',', nl), nil
}

// columnName returns the spreadsheet letters of a zero-based column index.
func columnName(i int) string {
	name := ""
	for i++; i > 0; i = (i - 1) / 26 {
		name = string(rune('A'+(i-1)%26)) + name
	}
	return name
}

// TaintFile writes sheet.csv.
func (s spreadsheet) TaintFile(dir, data, payload string) (string, error) {
	out, err := s.Taint(orSample(data, spreadsheetSample), payload)
	if err != nil {
		return "", err
	}
	return writeFile(dir, "sheet.csv", out)
}

const spreadsheetSample = `Sheet: Marketing budget FY2025
Line item,Owner,Q1,Q2,Q3,Q4,Total
Search ads,Ines,12000,12500,11000,14000,49500
Social ads,Ines,8000,8000,9500,12000,37500
Trade shows,Kofi,0,18500,0,22000,40500
Content agency,Marta,6000,6000,6000,6000,24000
Webinars,Kofi,1500,1500,2000,2000,7000
Contingency,Marta,2000,2000,2000,2000,8000
Total,,29500,48500,30500,58000,166500
Comment,G5,"Marta: includes the booth deposit for Hannover, refundable until 1 March."
`
