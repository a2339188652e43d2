module github.com/valkey-operator/valkey-operator/webhooks

go 1.26.0

require github.com/valkey-operator/valkey-operator/localkube v0.0.0-00010101000000-000000000000

replace github.com/valkey-operator/valkey-operator/localkube => ../localkube
