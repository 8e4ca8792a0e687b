package exportcase

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/pikit-go/pikit/attack"
	"github.com/pikit-go/pikit/dataset"
	"github.com/pikit-go/pikit/internal/termsafe"
	"github.com/pikit-go/pikit/matrix"
)

// The document: the cases kept, as a dataset.File with a comment on top,
// written by dataset.Encode and checked as the loader reads it back.

// file makes the dataset file of cases, with the scenario tables they
// name copied from --from.
func (x *Builder) file(cases []*Case) (*dataset.File, error) {
	f := &dataset.File{Meta: x.meta()}
	for _, c := range cases {
		f.Cases = append(f.Cases, c.fc)
		if c.scenario == "" {
			continue
		}
		body, err := fileValue("scenarios."+c.scenario, c.scenarioBody)
		if err != nil {
			return nil, err
		}
		table, ok := body.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("scenarios.%s: want a table, got %s", c.scenario, describeValue(c.scenarioBody))
		}
		if f.ScenarioTables == nil {
			f.ScenarioTables = map[string]map[string]any{}
		}
		f.ScenarioTables[c.scenario] = table
	}
	return f, nil
}

func (x *Builder) meta() dataset.Meta {
	name := strings.TrimSuffix(filepath.Base(x.Results), filepath.Ext(x.Results))
	if x.Results == "-" {
		name = "stdin"
	}
	return dataset.Meta{
		Name:        name + "-adaptive",
		Description: fmt.Sprintf("Winning injections of the adaptive results in %s, replayed with the fixed attack (pikit export-case)", x.Results),
	}
}

// Check makes sure a case loads with the dataset loader on its own, so a
// result naming an unknown method, option or agent is skipped with a
// warning rather than spoiling the file. It encodes and parses as Encode
// does, but writes nothing: Document writes the cases kept.
func (x *Builder) Check(c *Case) error {
	f, err := x.file([]*Case{c})
	if err != nil {
		return err
	}
	b, err := dataset.Marshal(f)
	if err != nil {
		return err
	}
	if _, err := dataset.Parse(x.DocName, b); err != nil {
		return errors.New(quoteErr(caseError(err)))
	}
	return nil
}

// caseError says what the loader found wrong with a case checked on its
// own, without the lines of the document it was checked in.
func caseError(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var msgs []string
		for _, e := range j.Unwrap() {
			msgs = append(msgs, caseError(e).Error())
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	var me *matrix.Error
	if errors.As(err, &me) {
		if me.Key != "" {
			return fmt.Errorf("%s: %s", me.Key, me.Msg)
		}
		return errors.New(me.Msg)
	}
	return err
}

// Document encodes every case with dataset.Encode, with a comment on top
// saying where they come from and what could not be recovered, and checks
// that the dataset loader reads back every id, payload and turn exactly.
func (x *Builder) Document(cases []*Case) ([]byte, error) {
	f, err := x.file(cases)
	if err != nil {
		return nil, fmt.Errorf("export-case: %w", err)
	}
	f.Comment = x.header(cases)
	var out bytes.Buffer
	ds, err := dataset.Encode(&out, x.DocName, f)
	if err != nil {
		return nil, fmt.Errorf("export-case: encoding the cases (a bug; nothing was written): %s", quoteErr(err))
	}
	b := out.Bytes()
	if err := x.verify(b, ds, cases); err != nil {
		return nil, fmt.Errorf("export-case: the encoded cases do not read back as written (a bug; nothing was written): %w", err)
	}
	return b, nil
}

// header is the comment on top of the file. Every value from the results
// is quoted in ASCII (%+q), and the encoder escapes whatever else a line
// holds: no newline can end the comment.
func (x *Builder) header(cases []*Case) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Exported by pikit export-case from %+q: the winning injections of adaptive\n", x.Results)
	fmt.Fprintln(&b, "searches, each replayed with the fixed attack. Run them again with:")
	fmt.Fprintln(&b, "    pikit dataset run FILE.toml")
	if x.Source != nil {
		fmt.Fprintf(&b, "Fields a result does not record were copied from %+q.\n", x.Source.ref)
	}
	for _, c := range cases {
		if len(c.notes) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\ncase %+q (line %d of the results):\n", c.id, c.line)
		for _, n := range c.notes {
			fmt.Fprintf(&b, "  %s\n", n)
		}
	}
	return b.String()
}

// verify compares each case's id, payload and turns, as the dataset
// loader read the document back (ds), with what was meant; it also makes
// sure nothing in the document would act on a terminal, so standard
// output carries it byte for byte.
func (x *Builder) verify(b []byte, ds *dataset.Dataset, cases []*Case) error {
	if termsafe.String(string(b)) != string(b) {
		return errors.New("a control or format character is left raw")
	}
	if len(ds.Cases) != len(cases) {
		return fmt.Errorf("%d cases read back, %d written", len(ds.Cases), len(cases))
	}
	for i, c := range cases {
		got := ds.Cases[i]
		if got.ID != c.id {
			return fmt.Errorf("case %d: id %+q read back as %+q", i+1, c.id, got.ID)
		}
		specs := got.Config.AttackSpecs
		if len(specs) != 1 || specs[0].Name != attack.Fixed {
			return fmt.Errorf("case %+q: the fixed attack's spec did not read back", c.id)
		}
		payload, _ := specs[0].Kwargs["payload"].(string)
		turns, _ := specs[0].Kwargs["turns"].([]any)
		same := payload == c.payload && len(turns) == len(c.turns)
		for j := 0; same && j < len(turns); j++ {
			same = turns[j] == c.turns[j]
		}
		if !same {
			return fmt.Errorf("case %+q: the payload or turns read back differently", c.id)
		}
	}
	return nil
}
