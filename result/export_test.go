package result

// AppendJSONFull is appendJSON with every text in full: the bytes
// json.Marshal gives for Plain.
func (r *Result) AppendJSONFull(dst []byte) []byte { return r.appendJSON(dst, false) }

// AppendString is appendString, for the tests of package result_test.
var AppendString = appendString

// Plain is Result without its JSON methods.
type Plain = plain
