module github.com/valkey-operator/valkey-operator/backup-controller

go 1.26.0

replace (
	github.com/valkey-operator/valkey-operator/acl-controller => ../acl-controller
	github.com/valkey-operator/valkey-operator/api => ../api
	github.com/valkey-operator/valkey-operator/cluster-controller => ../cluster-controller
	github.com/valkey-operator/valkey-operator/e2e => ../e2e
	github.com/valkey-operator/valkey-operator/internal => ../internal
	github.com/valkey-operator/valkey-operator/node-controller => ../node-controller
	github.com/valkey-operator/valkey-operator/tls-controller => ../tls-controller
	github.com/valkey-operator/valkey-operator/valkey => ../valkey
	github.com/valkey-operator/valkey-operator/webhooks => ../webhooks
)

require (
	github.com/redis/rueidis v1.0.79
	github.com/valkey-operator/valkey-operator/valkey v0.0.0
)

require golang.org/x/sys v0.47.0 // indirect
