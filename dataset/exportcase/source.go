package exportcase

import (
	"fmt"
	"os"

	"github.com/pikit-go/pikit/dataset"
	"github.com/pikit-go/pikit/matrix"
)

// What --from names: the config or dataset the results came from.

// Source is what --from names: one experiment config, or a dataset
// whose cases are looked up by id; scenarios are the raw tables of its
// file's [scenarios], for cases whose agent the file defines.
type Source struct {
	ref       string
	cfg       *matrix.Config
	ds        *dataset.Dataset
	cases     map[string]*matrix.Config
	scenarios map[string]any
}

// LoadSource loads --from with the project's loaders: a built-in
// dataset by name, else a file, which is a dataset when it has [[cases]]
// and an experiment config otherwise.
func LoadSource(ref string) (*Source, error) {
	src := &Source{ref: ref}
	var data []byte
	if dataset.IsFile(ref) {
		info, err := os.Stat(ref)
		switch {
		case err != nil:
			return nil, fmt.Errorf("--from: %w", err)
		case !info.Mode().IsRegular():
			return nil, fmt.Errorf("--from %s: not a regular file", ref)
		case info.Size() > MaxSourceBytes:
			return nil, fmt.Errorf("--from %s: %d bytes, over the %d MiB export-case reads", ref, info.Size(), MaxSourceBytes>>20)
		}
		if data, err = os.ReadFile(ref); err != nil {
			return nil, fmt.Errorf("--from: %w", err)
		}
		table, _, err := matrix.ParseTOML(ref, data)
		if err != nil {
			return nil, err
		}
		src.scenarios, _ = table["scenarios"].(map[string]any)
		if _, ok := table["cases"]; !ok {
			cfg, err := matrix.Parse(ref, data)
			if err != nil {
				return nil, err
			}
			if cfg.Empty() {
				return nil, fmt.Errorf("--from %s: the config sets nothing", ref)
			}
			src.cfg = &cfg
			return src, nil
		}
		if src.ds, err = dataset.Parse(ref, data); err != nil {
			return nil, err
		}
	} else {
		ds, err := dataset.Load(ref)
		if err != nil {
			return nil, fmt.Errorf("--from: %w", err)
		}
		src.ds = ds
		if data, err := dataset.Source(ref); err == nil {
			if table, _, err := matrix.ParseTOML("builtin/"+ref+".toml", data); err == nil {
				src.scenarios, _ = table["scenarios"].(map[string]any)
			}
		}
	}
	src.cases = map[string]*matrix.Config{}
	for i := range src.ds.Cases {
		c := &src.ds.Cases[i]
		src.cases[c.ID] = &c.Config
	}
	return src, nil
}

// lookup returns the config of a result's cell: the single config, or the
// dataset case of the result's case id; note says why there is none.
func (s *Source) lookup(caseID string) (cfg *matrix.Config, note string) {
	if s.cfg != nil {
		return s.cfg, ""
	}
	if cfg := s.cases[caseID]; cfg != nil {
		return cfg, ""
	}
	if caseID == "" {
		return nil, fmt.Sprintf("the result names no dataset case, and --from %+q is a dataset", s.ref)
	}
	return nil, fmt.Sprintf("dataset %+q has no case %+q", s.ref, caseID)
}
