package api

// Gate names the gate rt declares, for the test that walks the table.
func (rt Route) Gate() string {
	return [...]string{undeclared: "undeclared", public: "public", member: "member", sender: "sender", joiner: "joiner", opener: "opener", admin: "admin"}[rt.gate]
}
