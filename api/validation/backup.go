package validation

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// Name bounds of the backup objects: a backup's name prefixes its Jobs' names (with
// "-s<shard>-<attempt>", within the 63 characters of a label value), and a schedule's
// name prefixes its backups' names (with "-<unix time>").
const (
	MaxBackupNameLength   = 48
	MaxScheduleNameLength = 36
)

// cronParser is the schedule grammar: five fields or a descriptor (@daily, @every 1h).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule parses a ValkeyBackupSchedule's schedule.
func ParseSchedule(s string) (cron.Schedule, error) { return cronParser.Parse(s) }

// ValidateBackup runs every rule of a ValkeyBackup.
func ValidateBackup(b *v1alpha1.ValkeyBackup) field.ErrorList {
	if b == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "a ValkeyBackup is required")}
	}
	errs := validateObjectName(b.Name, MaxBackupNameLength)
	errs = append(errs, validateClusterRef(b.Spec.ClusterName, specPath.Child("clusterName"))...)
	errs = append(errs, validateObjectStore(&b.Spec.ObjectStore, false, specPath.Child("objectStore"))...)
	errs = append(errs, validateDeletionPolicy(b.Spec.DeletionPolicy, specPath.Child("deletionPolicy"))...)
	return errs
}

// ValidateBackupUpdate refuses any change of a ValkeyBackup's spec.
func ValidateBackupUpdate(old, b *v1alpha1.ValkeyBackup) field.ErrorList {
	errs := ValidateBackup(b)
	if old != nil && b != nil && !backupSpecEqual(old.Spec, b.Spec) {
		errs = append(errs, field.Forbidden(specPath, "the spec of a ValkeyBackup is immutable"))
	}
	return errs
}

// ValidateBackupSchedule runs every rule of a ValkeyBackupSchedule.
func ValidateBackupSchedule(s *v1alpha1.ValkeyBackupSchedule) field.ErrorList {
	if s == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "a ValkeyBackupSchedule is required")}
	}
	errs := validateObjectName(s.Name, MaxScheduleNameLength)
	errs = append(errs, validateClusterRef(s.Spec.ClusterName, specPath.Child("clusterName"))...)
	errs = append(errs, validateSchedule(s.Spec.Schedule, specPath.Child("schedule"))...)
	errs = append(errs, validateObjectStore(&s.Spec.ObjectStore, false, specPath.Child("objectStore"))...)
	errs = append(errs, validateRetention(s.Spec.Retention, specPath.Child("retention"))...)
	errs = append(errs, validateDeletionPolicy(s.Spec.BackupDeletionPolicy, specPath.Child("backupDeletionPolicy"))...)
	return errs
}

func validateObjectName(name string, max int) field.ErrorList {
	p := field.NewPath("metadata", "name")
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	if len(name) > max {
		errs = append(errs, field.TooLong(p, name, max))
	}
	return errs
}

func validateClusterRef(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "the name of a ValkeyCluster in the same namespace")}
	}
	if len(name) > validation.DNS1035LabelMaxLength {
		return field.ErrorList{field.TooLong(p, name, validation.DNS1035LabelMaxLength)}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1035Label(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

func validateDeletionPolicy(d v1alpha1.BackupDeletionPolicy, p *field.Path) field.ErrorList {
	switch d {
	case "", v1alpha1.BackupRetain, v1alpha1.BackupDelete:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, d, []string{string(v1alpha1.BackupRetain), string(v1alpha1.BackupDelete)})}
}

func validateRetention(r v1alpha1.BackupRetention, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.KeepLast != nil && *r.KeepLast < 1 {
		errs = append(errs, field.Invalid(p.Child("keepLast"), *r.KeepLast, "must be at least 1"))
	}
	if r.MaxAge != nil && r.MaxAge.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("maxAge"), r.MaxAge.Duration.String(), "must be positive"))
	}
	return errs
}

// validateObjectStore checks a store description; a data source's store names a
// backup by its full path and so has no prefix.
func validateObjectStore(o *v1alpha1.ObjectStoreSpec, dataSource bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if o.S3 == nil {
		return field.ErrorList{field.Required(p.Child("s3"), "the object store (s3 is the supported provider)")}
	}
	if dataSource && o.Prefix != "" {
		errs = append(errs, field.Forbidden(p.Child("prefix"), "a data source names the backup by its full path; leave prefix empty"))
	}
	errs = append(errs, tooLong(p.Child("prefix"), o.Prefix, MaxPrefixLength)...)
	errs = append(errs, validatePrefix(o.Prefix, p.Child("prefix"))...)
	s3 := o.S3
	sp := p.Child("s3")
	errs = append(errs, validateBucket(s3.Bucket, sp.Child("bucket"))...)
	errs = append(errs, validateRegion(s3.RegionOrDefault(), sp.Child("region"))...)
	errs = append(errs, validateEndpoint(s3, sp.Child("endpoint"))...)
	errs = append(errs, validateSecretName(s3.Credentials.SecretName, true, sp.Child("credentials", "secretName"))...)
	errs = append(errs, validateStoreKey(s3.Credentials.AccessKeyID(), sp.Child("credentials", "accessKeyIDKey"))...)
	errs = append(errs, validateStoreKey(s3.Credentials.SecretAccessKey(), sp.Child("credentials", "secretAccessKeyKey"))...)
	if s3.CABundle != nil {
		errs = append(errs, validateSecretName(s3.CABundle.SecretName, true, sp.Child("caBundle", "secretName"))...)
		errs = append(errs, validateStoreKey(s3.CABundle.KeyOrDefault(), sp.Child("caBundle", "key"))...)
	}
	return errs
}

func validateStoreKey(k string, p *field.Path) field.ErrorList {
	return validateSecretKey(k, map[string]bool{}, p)
}

// reservedBucketPrefixes and reservedBucketSuffixes are what AWS keeps for itself in
// the names of general purpose buckets (and of access points and their aliases).
var (
	reservedBucketPrefixes = []string{"xn--", "sthree-", "amzn-s3-demo-"}
	reservedBucketSuffixes = []string{"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"}
)

// validateBucket applies AWS's naming rules of general purpose buckets, which
// S3-compatible stores follow too: the name is a path segment or a DNS label of every
// request, so nothing else may escape into it.
func validateBucket(b string, p *field.Path) field.ErrorList {
	const rules = "a bucket name has 3 to 63 lowercase letters, digits, dots and hyphens, " +
		"and starts and ends with a letter or digit"
	switch {
	case len(b) < 3 || len(b) > 63:
		return field.ErrorList{field.Invalid(p, b, rules)}
	case strings.Trim(b, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "":
		return field.ErrorList{field.Invalid(p, b, rules)}
	case !isLowerAlnum(b[0]) || !isLowerAlnum(b[len(b)-1]):
		return field.ErrorList{field.Invalid(p, b, rules)}
	case strings.Contains(b, ".."):
		return field.ErrorList{field.Invalid(p, b, "a bucket name must not hold two adjacent dots")}
	case isIPv4(b):
		return field.ErrorList{field.Invalid(p, b, "a bucket name must not be an IP address")}
	}
	for _, r := range reservedBucketPrefixes {
		if strings.HasPrefix(b, r) {
			return field.ErrorList{field.Invalid(p, b, fmt.Sprintf("a bucket name must not start with %q (reserved by AWS)", r))}
		}
	}
	for _, r := range reservedBucketSuffixes {
		if strings.HasSuffix(b, r) {
			return field.ErrorList{field.Invalid(p, b, fmt.Sprintf("a bucket name must not end with %q (reserved by AWS)", r))}
		}
	}
	return nil
}

func isLowerAlnum(c byte) bool { return ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') }

// isIPv4 reports whether s reads as an IPv4 address (four dot-separated numbers).
func isIPv4(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, part := range parts {
		if part == "" || strings.Trim(part, "0123456789") != "" {
			return false
		}
	}
	return true
}

// validateRegion refuses regions that could not be a host label of the AWS endpoint
// the SDK builds from it (s3.<region>.amazonaws.com).
func validateRegion(r string, p *field.Path) field.ErrorList {
	if errs := tooLong(p, r, MaxRegionLength); errs != nil {
		return errs
	}
	if r == "" || strings.Trim(strings.ToLower(r), "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		return field.ErrorList{field.Invalid(p, r, "a region has letters, digits, '-' and '_' only (us-east-1)")}
	}
	return nil
}

// validateEndpoint checks the endpoint's form and asks the operator's endpoint policy
// whether its host may be reached; an empty endpoint is AWS S3 of the region.
func validateEndpoint(s3 *v1alpha1.S3Spec, p *field.Path) field.ErrorList {
	pol := CurrentPolicy().ObjectStore
	if s3.Endpoint == "" {
		if validateRegion(s3.RegionOrDefault(), p) != nil {
			return nil // the region's own error says it all
		}
		aws := &url.URL{Scheme: "https", Host: "s3." + s3.RegionOrDefault() + ".amazonaws.com"}
		if err := pol.CheckEndpoint(aws); err != nil {
			return field.ErrorList{field.Invalid(p, s3.Endpoint, fmt.Sprintf("empty means AWS S3 (%s): %v", aws.Host, err))}
		}
		return nil
	}
	if errs := tooLong(p, s3.Endpoint, MaxObjectStoreEndpoint); errs != nil {
		return errs
	}
	u, err := url.Parse(s3.Endpoint)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(p, s3.Endpoint, err.Error())}
	case u.Scheme != "http" && u.Scheme != "https":
		return field.ErrorList{field.Invalid(p, s3.Endpoint, "must be an http:// or https:// URL")}
	case u.Host == "":
		return field.ErrorList{field.Invalid(p, s3.Endpoint, "must name a host")}
	case u.User != nil:
		return field.ErrorList{field.Invalid(p, s3.Endpoint, "must not hold credentials (user@ or user:password@): they belong in the Secret named by credentials")}
	}
	if err := pol.CheckEndpoint(u); err != nil {
		return field.ErrorList{field.Invalid(p, s3.Endpoint, err.Error())}
	}
	return nil
}

// validatePrefix refuses object name prefixes that would escape or confuse the layout.
func validatePrefix(s string, p *field.Path) field.ErrorList {
	if s == "" {
		return nil
	}
	if strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") {
		return field.ErrorList{field.Invalid(p, s, "must not start or end with /")}
	}
	for _, part := range strings.Split(s, "/") {
		if part == "" || part == "." || part == ".." {
			return field.ErrorList{field.Invalid(p, s, "must not hold empty, . or .. segments")}
		}
	}
	return nil
}

// validateDataSource checks that a data source names one backup: by ValkeyBackup name,
// or by object store and path.
func validateDataSource(ds *v1alpha1.DataSource, p *field.Path) field.ErrorList {
	if ds == nil {
		return nil
	}
	byName := ds.BackupName != ""
	byPath := ds.ObjectStore != nil || ds.Path != ""
	switch {
	case byName && byPath:
		return field.ErrorList{field.Invalid(p, "backupName and objectStore/path", "name the backup either by backupName or by objectStore and path, not both")}
	case byName:
		var errs field.ErrorList
		if len(ds.BackupName) > validation.DNS1123LabelMaxLength {
			return field.ErrorList{field.TooLong(p.Child("backupName"), ds.BackupName, validation.DNS1123LabelMaxLength)}
		}
		for _, msg := range validation.IsDNS1123Label(ds.BackupName) {
			errs = append(errs, field.Invalid(p.Child("backupName"), ds.BackupName, msg))
		}
		return errs
	case ds.ObjectStore == nil:
		return field.ErrorList{field.Required(p.Child("objectStore"), "the object store holding the backup named by path")}
	case ds.Path == "":
		return field.ErrorList{field.Required(p.Child("path"), "the backup's folder in the bucket (its ValkeyBackup's status.path)")}
	}
	errs := validateObjectStore(ds.ObjectStore, true, p.Child("objectStore"))
	if tl := tooLong(p.Child("path"), ds.Path, MaxDataSourcePath); tl != nil {
		return append(errs, tl...)
	}
	return append(errs, validatePrefix(ds.Path, p.Child("path"))...)
}

// validateDataSourceUpdate refuses adding or removing a data source after creation
// (the CRD's rule refuses changing it).
func validateDataSourceUpdate(old, ds *v1alpha1.DataSource, p *field.Path) field.ErrorList {
	switch {
	case old == nil && ds != nil:
		return field.ErrorList{field.Forbidden(p, "a data source can only be set when the cluster is created")}
	case old != nil && ds == nil:
		return field.ErrorList{field.Forbidden(p, "dataSource cannot be removed")}
	case old != nil && !dataSourceEqual(*old, *ds):
		return field.ErrorList{field.Forbidden(p, "dataSource is immutable")}
	}
	return nil
}

func dataSourceEqual(a, b v1alpha1.DataSource) bool {
	if a.BackupName != b.BackupName || a.Path != b.Path || (a.ObjectStore == nil) != (b.ObjectStore == nil) {
		return false
	}
	return a.ObjectStore == nil || objectStoreEqual(*a.ObjectStore, *b.ObjectStore)
}

func backupSpecEqual(a, b v1alpha1.ValkeyBackupSpec) bool {
	return a.ClusterName == b.ClusterName && a.DeletionPolicyOrDefault() == b.DeletionPolicyOrDefault() &&
		objectStoreEqual(a.ObjectStore, b.ObjectStore)
}

func objectStoreEqual(a, b v1alpha1.ObjectStoreSpec) bool {
	if a.Prefix != b.Prefix || (a.S3 == nil) != (b.S3 == nil) {
		return false
	}
	if a.S3 == nil {
		return true
	}
	x, y := *a.S3, *b.S3
	if (x.CABundle == nil) != (y.CABundle == nil) || (x.CABundle != nil && *x.CABundle != *y.CABundle) {
		return false
	}
	x.CABundle, y.CABundle = nil, nil
	return x == y
}
