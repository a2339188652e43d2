module github.com/valkey-operator/valkey-operator/valkey

go 1.26.0

replace github.com/valkey-operator/valkey-operator/valkeyconf => ../valkeyconf

require (
	github.com/redis/rueidis v1.0.79
	github.com/valkey-operator/valkey-operator/valkeyconf v0.0.0-00010101000000-000000000000
)

require golang.org/x/sys v0.47.0 // indirect
