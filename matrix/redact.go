package matrix

import (
	"reflect"

	"github.com/pikit-go/pikit/target"
)

// redactResult replaces every known secret value in every string of a
// result: its texts, its trace (messages, tool arguments and results), its
// evidence and metadata (a judge's raw answer). A model may echo an API key
// it was shown or tricked into revealing; results, the cache, reports and
// traces must never carry it. Runs only when the environment holds keys.
//
// A result shares maps with its cell (the method options) and so with
// every other cell of the plan, which other workers read at the same
// time: nothing is changed in place. Whatever holds a secret is copied,
// the copy redacted, and the result pointed at the copy.
func redactResult(res *Result, r *target.ValueRedactor) {
	if r.Empty() {
		return
	}
	v := reflect.ValueOf(res).Elem()
	if nv, changed := redacted(v, r); changed {
		v.Set(nv)
	}
}

// redacted returns a redacted copy of v and true when v holds a secret,
// else v and false. v itself is never written.
func redacted(v reflect.Value, r *target.ValueRedactor) (reflect.Value, bool) {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); r.Contains(s) {
			return reflect.ValueOf(r.Redact(s)).Convert(v.Type()), true
		}
	case reflect.Pointer:
		if v.IsNil() {
			break
		}
		if elem, changed := redacted(v.Elem(), r); changed {
			p := reflect.New(v.Type().Elem())
			p.Elem().Set(elem)
			return p, true
		}
	case reflect.Struct:
		var out reflect.Value
		for i := 0; i < v.NumField(); i++ {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			if f, changed := redacted(v.Field(i), r); changed {
				if !out.IsValid() {
					out = reflect.New(v.Type()).Elem()
					out.Set(v)
				}
				out.Field(i).Set(f)
			}
		}
		if out.IsValid() {
			return out, true
		}
	case reflect.Slice:
		var out reflect.Value
		for i := 0; i < v.Len(); i++ {
			if e, changed := redacted(v.Index(i), r); changed {
				if !out.IsValid() {
					out = reflect.MakeSlice(v.Type(), v.Len(), v.Len())
					reflect.Copy(out, v)
				}
				out.Index(i).Set(e)
			}
		}
		if out.IsValid() {
			return out, true
		}
	case reflect.Map:
		// Keys too: a model names its tool arguments.
		changed := false
		iter := v.MapRange()
		for iter.Next() {
			_, kc := redacted(iter.Key(), r)
			_, vc := redacted(iter.Value(), r)
			if kc || vc {
				changed = true
				break
			}
		}
		if !changed {
			break
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter = v.MapRange()
		for iter.Next() {
			k, _ := redacted(iter.Key(), r)
			e, _ := redacted(iter.Value(), r)
			out.SetMapIndex(k, e)
		}
		return out, true
	case reflect.Interface:
		if v.IsNil() {
			break
		}
		if inner, changed := redacted(v.Elem(), r); changed {
			out := reflect.New(v.Type()).Elem()
			out.Set(inner)
			return out, true
		}
	}
	return v, false
}
