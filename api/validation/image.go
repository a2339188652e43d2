package validation

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/valkeyconf"
)

// validateServerImage refuses a cluster's image that surely runs no Valkey 8.0 or later:
// a tag that names an older Valkey (valkeyconf.ImageVersion), or a repository of another
// server (its last path element is redis or starts with redis-: redis, bitnami/redis,
// redis/redis-stack-server). Such a server stops at the first line of valkey.conf it does
// not know (primaryauth, from 8.0 on) and quotes it in its log. An image whose name says
// nothing is admitted: the server command checks what really runs (valkey-server
// --version) before it reads its config.
func validateServerImage(image string, p *field.Path) field.ErrorList {
	if image == "" {
		return nil
	}
	if repo := imageRepository(image); isOtherServer(repo) {
		return field.ErrorList{field.Invalid(p, image, fmt.Sprintf(
			"the repository %s runs Redis, not Valkey: the operator runs Valkey %d.%d or later", repo, valkeyconf.Oldest.Major, valkeyconf.Oldest.Minor))}
	}
	v, known := valkeyconf.ImageVersion(image)
	if valkeyconf.SurelyLacks(v, known, valkeyconf.Oldest) {
		return field.ErrorList{field.Invalid(p, image, fmt.Sprintf(
			"its tag names Valkey %s; the operator runs Valkey %d.%d or later", versionText(v, known), valkeyconf.Oldest.Major, valkeyconf.Oldest.Minor))}
	}
	return nil
}

// imageRepository is an image reference without its tag and digest
// ("docker.io/bitnami/redis:7.2@sha256:..." gives "docker.io/bitnami/redis").
func imageRepository(image string) string {
	ref, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(ref, ":"); i >= 0 && !strings.Contains(ref[i+1:], "/") {
		ref = ref[:i]
	}
	return ref
}

// isOtherServer reports whether a repository's last path element names Redis.
func isOtherServer(repo string) bool {
	name := strings.ToLower(repo[strings.LastIndex(repo, "/")+1:])
	return name == "redis" || strings.HasPrefix(name, "redis-")
}

// versionText is a version to the precision a tag gave it ("7", "7.2", "7.2.4").
func versionText(v valkeyconf.Version, known int) string {
	switch known {
	case 1:
		return fmt.Sprint(v.Major)
	case 2:
		return fmt.Sprintf("%d.%d", v.Major, v.Minor)
	}
	return v.String()
}
