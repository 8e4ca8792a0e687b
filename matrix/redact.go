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
func redactResult(res *Result, r *target.ValueRedactor) {
	if r.Empty() {
		return
	}
	redactValue(reflect.ValueOf(res).Elem(), r)
}

// redactValue walks v, rewriting strings in place. Maps and interfaces
// hold unaddressable values, so their entries are copied, redacted and
// stored back.
func redactValue(v reflect.Value, r *target.ValueRedactor) {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); r.Contains(s) && v.CanSet() {
			v.SetString(r.Redact(s))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			redactValue(v.Elem(), r)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() {
				redactValue(f, r)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			redactValue(v.Index(i), r)
		}
	case reflect.Map:
		// Keys too: a model names its tool arguments.
		var keys []reflect.Value
		iter := v.MapRange()
		for iter.Next() {
			keys = append(keys, iter.Key())
		}
		for _, k := range keys {
			val := v.MapIndex(k)
			cp := reflect.New(val.Type()).Elem()
			cp.Set(val)
			redactValue(cp, r)
			if k.Kind() == reflect.String && r.Contains(k.String()) {
				v.SetMapIndex(k, reflect.Value{})
				k = reflect.ValueOf(r.Redact(k.String())).Convert(k.Type())
			}
			v.SetMapIndex(k, cp)
		}
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		inner := v.Elem()
		cp := reflect.New(inner.Type()).Elem()
		cp.Set(inner)
		redactValue(cp, r)
		if v.CanSet() {
			v.Set(cp)
		}
	}
}
