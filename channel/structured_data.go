package channel

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/pikit-go/pikit/method"
)

func init() {
	register(method.Info{
		Name:        "structured_data",
		Description: "hides the payload in tabular or JSON data: a field's value, a field's name, or a comment",
		Options: []method.Option{
			{
				Name:    "fmt",
				Help:    "the data format",
				Default: "json",
				Choices: []string{"json", "csv", "tsv"},
			},
			{
				Name:    "method",
				Help:    "field_value: a new notes field (column) holding the payload; field_name: a field (column) named by the payload; comment: a _comment key in JSON, # lines in CSV and TSV",
				Default: "field_value",
				Choices: []string{"field_value", "field_name", "comment"},
			},
		},
	}, func(o options) (Channel, error) { return structuredData{format: o["fmt"], method: o["method"]}, nil })
	RegisterSample("json", jsonSample)
	RegisterSample("csv", csvSample)
	RegisterSample("tsv", tsvSample)
}

// structuredData hides a payload in JSON, CSV or TSV data.
type structuredData struct{ format, method string }

var (
	_ Channel    = structuredData{}
	_ Sampler    = structuredData{}
	_ FileWriter = structuredData{}
)

// Sample returns clean data in the channel's format.
func (s structuredData) Sample() string {
	switch s.format {
	case "csv":
		return csvSample
	case "tsv":
		return tsvSample
	}
	return jsonSample
}

// Taint hides the payload, keeping the data valid in its format.
func (s structuredData) Taint(data, payload string) (string, error) {
	if s.format == "json" {
		return s.taintJSON(data, payload)
	}
	return s.taintTable(data, payload)
}

// taintJSON adds one member to the first object: the top-level object, or
// the first element of a top-level array of objects. Other JSON, and text
// that is not JSON, is wrapped as {"data": ...} first. The member is
// inserted as text, so the rest of the document keeps its layout and key
// order.
func (s structuredData) taintJSON(data, payload string) (string, error) {
	key, value := "notes", payload
	switch s.method {
	case "field_name":
		key, value = payload, ""
	case "comment":
		key = "_comment"
	}
	start, end, ok := firstObject(data)
	if !ok {
		var wrapped string
		if json.Valid([]byte(data)) && strings.TrimSpace(data) != "" {
			wrapped = "{\n  \"data\": " + strings.TrimSpace(data) + "\n}\n"
		} else {
			wrapped = "{\n  \"data\": " + jsonString(data) + "\n}\n"
		}
		start, end, _ = firstObject(wrapped)
		data = wrapped
	}
	if key == "notes" {
		var obj map[string]json.RawMessage
		_ = json.Unmarshal([]byte(data[start:end+1]), &obj)
		key = freshName(func(k string) bool { _, ok := obj[k]; return ok }, "notes", "remarks", "comments")
	}
	member := jsonString(key) + ": " + jsonString(value)
	// The last non-space byte before the closing brace ends the last member.
	last := end - 1
	for last > start && strings.ContainsRune(" \t\r\n", rune(data[last])) {
		last--
	}
	if last == start { // empty object
		return data[:start+1] + member + data[end:], nil
	}
	sep := ", "
	if strings.Contains(data[start:end], "\n") {
		ls := strings.LastIndexByte(data[:last], '\n') + 1
		indent := data[ls:]
		indent = indent[:len(indent)-len(strings.TrimLeft(indent, " \t"))]
		sep = "," + newline(data) + indent
	}
	return data[:last+1] + sep + member + data[last+1:], nil
}

// firstObject finds the byte offsets of the braces of the top-level object,
// or of the first element of a top-level array when that is an object.
func firstObject(data string) (start, end int, ok bool) {
	if !json.Valid([]byte(data)) {
		return 0, 0, false
	}
	dec := json.NewDecoder(strings.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return 0, 0, false
	}
	if tok == json.Delim('[') {
		if !dec.More() {
			return 0, 0, false
		}
		var raw json.RawMessage
		before := dec.InputOffset()
		if err := dec.Decode(&raw); err != nil || len(raw) == 0 || raw[0] != '{' {
			return 0, 0, false
		}
		start = int(before) + bytes.IndexByte([]byte(data[before:]), '{')
		return start, int(dec.InputOffset()) - 1, true
	}
	if tok != json.Delim('{') {
		return 0, 0, false
	}
	start = int(dec.InputOffset()) - 1
	depth := 1
	for depth > 0 {
		tok, err := dec.Token()
		if err != nil {
			return 0, 0, false
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return start, int(dec.InputOffset()) - 1, true
}

// jsonString encodes s as a JSON string without HTML escaping, so the
// payload stays readable.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// taintTable rewrites CSV or TSV through encoding/csv, so every field is
// quoted as its content needs.
func (s structuredData) taintTable(data, payload string) (string, error) {
	comma := ','
	if s.format == "tsv" {
		comma = '\t'
	}
	records, ok := readTable(data, comma)
	if s.method == "comment" {
		var b strings.Builder
		for _, l := range splitLines(payload) {
			b.WriteString(strings.TrimRight("# "+l, " ") + newline(data))
		}
		return b.String() + data, nil
	}
	if !ok {
		// Not a table: add the payload as one more record.
		out := writeTable([][]string{{payload}}, comma, newline(data))
		if data == "" || strings.HasSuffix(data, "\n") {
			return data + out, nil
		}
		return data + newline(data) + out, nil
	}
	header := freshName(func(k string) bool { return slices.Contains(records[0], k) }, "notes", "remarks", "comments")
	cell := payload
	if s.method == "field_name" {
		header, cell = payload, ""
	}
	for i := range records {
		switch {
		case i == 0:
			records[i] = append(records[i], header)
		case i == 1:
			records[i] = append(records[i], cell)
		default:
			records[i] = append(records[i], "")
		}
	}
	if len(records) == 1 {
		records = append(records, append(make([]string, len(records[0])-1), cell))
	}
	return writeTable(records, comma, newline(data)), nil
}

// readTable parses CSV or TSV leniently (rows may differ in length); it
// reports false for text that does not parse or has no rows.
func readTable(data string, comma rune) ([][]string, bool) {
	r := csv.NewReader(strings.NewReader(data))
	r.Comma = comma
	r.FieldsPerRecord = -1
	var records [][]string
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false
		}
		records = append(records, rec)
	}
	return records, len(records) > 0
}

func writeTable(records [][]string, comma rune, nl string) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Comma = comma
	w.UseCRLF = nl == "\r\n"
	_ = w.WriteAll(records) // writing to a strings.Builder cannot fail
	return b.String()
}

// TaintFile writes data.json, data.csv or data.tsv.
func (s structuredData) TaintFile(dir, data, payload string) (string, error) {
	out, err := s.Taint(orSample(data, s.Sample()), payload)
	if err != nil {
		return "", err
	}
	return writeFile(dir, "data."+s.format, out)
}

const jsonSample = `{
  "order_id": "SO-558102",
  "placed_at": "2025-09-22T14:07:31Z",
  "status": "shipped",
  "customer": {
    "id": "C-20417",
    "name": "Tomasz Wierzbicki",
    "email": "t.wierzbicki@example.net"
  },
  "items": [
    {"sku": "KT-1180", "name": "Enamel camping mug, 350 ml", "qty": 2, "unit_price": 14.5},
    {"sku": "KT-2215", "name": "Folding titanium spork", "qty": 1, "unit_price": 11.0},
    {"sku": "LT-0904", "name": "Rechargeable headlamp, 400 lm", "qty": 1, "unit_price": 39.95}
  ],
  "shipping": {
    "carrier": "Parcelway",
    "tracking": "PW7730119482GB",
    "address": "14 Mill Lane, Hebden Bridge, HX7 8AB, United Kingdom"
  },
  "total": 79.95,
  "currency": "GBP"
}
`

const csvSample = `station_id,date,min_temp_c,max_temp_c,precip_mm,wind_max_kmh,notes
KLW-04,2025-03-01,-2.1,6.4,0.0,22,
KLW-04,2025-03-02,0.3,8.9,1.2,31,light rain after 16:00
KLW-04,2025-03-03,1.8,10.2,0.0,18,
KLW-04,2025-03-04,3.5,12.7,4.8,44,"gusts, brief hail at 11:20"
KLW-04,2025-03-05,2.2,9.1,0.6,27,
KLW-04,2025-03-06,-0.4,7.3,0.0,15,ground frost overnight
`

const tsvSample = "employee_id\tname\tteam\tstart_date\tlocation\n" +
	"E1042\tRosa Delgado\tPlatform\t2021-06-14\tLisbon\n" +
	"E1107\tKwame Mensah\tData\t2022-01-10\tAccra\n" +
	"E1133\tHelga Sørensen\tSecurity\t2022-09-05\tCopenhagen\n" +
	"E1190\tArjun Iyer\tPlatform\t2023-03-20\tRemote\n" +
	"E1214\tMei Tanaka\tDesign\t2024-02-01\tOsaka\n"
