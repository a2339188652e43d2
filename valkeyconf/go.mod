// Module valkeyconf is what the operator knows about Valkey's configuration keys, as
// tables, with no dependency beyond the standard library: the API's validation, the
// config renderer, both controllers and the docs read the same rules from here.
module github.com/valkey-operator/valkey-operator/valkeyconf

go 1.26.0
