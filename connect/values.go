package connect

import "fmt"

// GetWithoutDefault returns the named field's value as set, nil when unset
// even if the field has a default (Kafka's Struct.getWithoutDefault, for
// replace.null.with.default=false).
func (st *Struct) GetWithoutDefault(name string) (any, error) {
	f := st.schema.Field(name)
	if f == nil {
		return nil, fmt.Errorf("%s is not a valid field name", name)
	}
	return st.values[f.Index], nil
}
