package validation

import (
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

func validStore() v1alpha1.ObjectStoreSpec {
	return v1alpha1.ObjectStoreSpec{Prefix: "prod", S3: &v1alpha1.S3Spec{
		Bucket: "backups", Endpoint: "https://s3.example.com:9000", ForcePathStyle: true,
		Credentials: v1alpha1.S3Credentials{SecretName: "s3-creds"},
	}}
}

func validBackup() *v1alpha1.ValkeyBackup {
	return &v1alpha1.ValkeyBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "default"},
		Spec:       v1alpha1.ValkeyBackupSpec{ClusterName: "demo", ObjectStore: validStore()},
	}
}

func validSchedule() *v1alpha1.ValkeyBackupSchedule {
	return &v1alpha1.ValkeyBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly"},
		Spec:       v1alpha1.ValkeyBackupScheduleSpec{ClusterName: "demo", Schedule: "0 3 * * *", ObjectStore: validStore()},
	}
}

func checkErrs(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	got := errs.ToAggregate()
	if len(want) == 0 {
		if got != nil {
			t.Fatalf("unexpected errors: %v", got)
		}
		return
	}
	if got == nil {
		t.Fatalf("no error, want %q", want)
	}
	for _, w := range want {
		if !strings.Contains(got.Error(), w) {
			t.Errorf("errors %q lack %q", got.Error(), w)
		}
	}
}

func TestValidateBackup(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(b *v1alpha1.ValkeyBackup)
		want   []string
	}{
		{name: "valid"},
		{name: "no cluster", mutate: func(b *v1alpha1.ValkeyBackup) { b.Spec.ClusterName = "" },
			want: []string{"spec.clusterName: Required value"}},
		{name: "long name", mutate: func(b *v1alpha1.ValkeyBackup) { b.Name = strings.Repeat("a", 49) },
			want: []string{"metadata.name: Too long"}},
		{name: "no s3", mutate: func(b *v1alpha1.ValkeyBackup) { b.Spec.ObjectStore.S3 = nil },
			want: []string{"spec.objectStore.s3: Required value"}},
		{name: "short bucket", mutate: func(b *v1alpha1.ValkeyBackup) { b.Spec.ObjectStore.S3.Bucket = "ab" },
			want: []string{"spec.objectStore.s3.bucket: Invalid value"}},
		{name: "endpoint without scheme", mutate: func(b *v1alpha1.ValkeyBackup) { b.Spec.ObjectStore.S3.Endpoint = "s3.example.com" },
			want: []string{"spec.objectStore.s3.endpoint: Invalid value"}},
		{name: "no credentials", mutate: func(b *v1alpha1.ValkeyBackup) { b.Spec.ObjectStore.S3.Credentials.SecretName = "" },
			want: []string{"spec.objectStore.s3.credentials.secretName: Required value"}},
		{name: "bad key", mutate: func(b *v1alpha1.ValkeyBackup) { b.Spec.ObjectStore.S3.Credentials.AccessKeyIDKey = "a b" },
			want: []string{"spec.objectStore.s3.credentials.accessKeyIDKey: Invalid value"}},
		{name: "ca bundle without secret", mutate: func(b *v1alpha1.ValkeyBackup) {
			b.Spec.ObjectStore.S3.CABundle = &v1alpha1.SecretKeySelector{}
		}, want: []string{"spec.objectStore.s3.caBundle.secretName: Required value"}},
		{name: "prefix with ..", mutate: func(b *v1alpha1.ValkeyBackup) { b.Spec.ObjectStore.Prefix = "a/../b" },
			want: []string{"spec.objectStore.prefix: Invalid value"}},
		{name: "prefix with slash", mutate: func(b *v1alpha1.ValkeyBackup) { b.Spec.ObjectStore.Prefix = "/a" },
			want: []string{"spec.objectStore.prefix: Invalid value"}},
		{name: "unknown policy", mutate: func(b *v1alpha1.ValkeyBackup) { b.Spec.DeletionPolicy = "Keep" },
			want: []string{"spec.deletionPolicy: Unsupported value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := validBackup()
			if c.mutate != nil {
				c.mutate(b)
			}
			checkErrs(t, ValidateBackup(b), c.want)
		})
	}
}

// Bucket names follow AWS's rules of general purpose buckets.
func TestValidateBucket(t *testing.T) {
	cases := []struct {
		bucket string
		want   string
	}{
		{bucket: "backups"},
		{bucket: "my.valkey-backups.2024"},
		{bucket: "abc"},
		{bucket: strings.Repeat("a", 63)},
		{bucket: "ab", want: "3 to 63 lowercase letters"},
		{bucket: strings.Repeat("a", 64), want: "3 to 63 lowercase letters"},
		{bucket: "../../x", want: "3 to 63 lowercase letters, digits, dots and hyphens, and starts and ends with a letter or digit"},
		{bucket: "a/b/c", want: "3 to 63 lowercase letters"},
		{bucket: "Backups", want: "3 to 63 lowercase letters"},
		{bucket: "my_backups", want: "3 to 63 lowercase letters"},
		{bucket: "-backups", want: "starts and ends with a letter or digit"},
		{bucket: "backups.", want: "starts and ends with a letter or digit"},
		{bucket: "my..backups", want: "must not hold two adjacent dots"},
		{bucket: "192.168.5.4", want: "must not be an IP address"},
		{bucket: "xn--backups", want: `must not start with "xn--" (reserved by AWS)`},
		{bucket: "sthree-backups", want: `must not start with "sthree-"`},
		{bucket: "amzn-s3-demo-bucket", want: `must not start with "amzn-s3-demo-"`},
		{bucket: "backups-s3alias", want: `must not end with "-s3alias" (reserved by AWS)`},
		{bucket: "backups--ol-s3", want: `must not end with "--ol-s3"`},
		{bucket: "backups.mrap", want: `must not end with ".mrap"`},
		{bucket: "backups--x-s3", want: `must not end with "--x-s3"`},
		{bucket: "backups--table-s3", want: `must not end with "--table-s3"`},
	}
	for _, tc := range cases {
		t.Run(tc.bucket, func(t *testing.T) {
			b := validBackup()
			b.Spec.ObjectStore.S3.Bucket = tc.bucket
			var want []string
			if tc.want != "" {
				want = []string{"spec.objectStore.s3.bucket: Invalid value: " + strconv.Quote(tc.bucket), tc.want}
			}
			checkErrs(t, ValidateBackup(b), want)
		})
	}
}

// The backup objects' strings are bounded as their CRDs say, with the API server's words.
func TestBackupStringLimits(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(b *v1alpha1.ValkeyBackup)
		want   string
	}{
		{name: "region", mutate: func(b *v1alpha1.ValkeyBackup) { b.Spec.ObjectStore.S3.Region = strings.Repeat("a", 64) },
			want: "spec.objectStore.s3.region: Too long: may not be more than 63 characters"},
		{name: "region that is not a label", mutate: func(b *v1alpha1.ValkeyBackup) { b.Spec.ObjectStore.S3.Region = "x.evil.example/" },
			want: "spec.objectStore.s3.region: Invalid value"},
		{name: "endpoint", mutate: withEndpoint("https://" + strings.Repeat("a", 510) + ".example.com"),
			want: "spec.objectStore.s3.endpoint: Too long: may not be more than 512 characters"},
		{name: "prefix", mutate: func(b *v1alpha1.ValkeyBackup) { b.Spec.ObjectStore.Prefix = strings.Repeat("a", 257) },
			want: "spec.objectStore.prefix: Too long: may not be more than 256 characters"},
		{name: "cluster name", mutate: func(b *v1alpha1.ValkeyBackup) { b.Spec.ClusterName = strings.Repeat("a", 64) },
			want: "spec.clusterName: Too long: may not be more than 63 bytes"},
		{name: "credentials Secret", mutate: func(b *v1alpha1.ValkeyBackup) {
			b.Spec.ObjectStore.S3.Credentials.SecretName = strings.Repeat("a", 254)
		},
			want: "spec.objectStore.s3.credentials.secretName: Invalid value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := validBackup()
			tc.mutate(b)
			checkErrs(t, ValidateBackup(b), []string{tc.want})
		})
	}
	s := validSchedule()
	s.Spec.Schedule = "0 3 * * *" + strings.Repeat(" ", 130)
	checkErrs(t, ValidateBackupSchedule(s), []string{"spec.schedule: Too long: may not be more than 128 characters"})
}

func TestValidateBackupUpdate(t *testing.T) {
	old, b := validBackup(), validBackup()
	checkErrs(t, ValidateBackupUpdate(old, b), nil)
	b.Spec.ClusterName = "other"
	checkErrs(t, ValidateBackupUpdate(old, b), []string{"spec: Forbidden"})
	b = validBackup()
	b.Spec.DeletionPolicy = v1alpha1.BackupRetain // the default spelled out is no change
	checkErrs(t, ValidateBackupUpdate(old, b), nil)
}

func TestValidateBackupSchedule(t *testing.T) {
	base := validSchedule
	cases := []struct {
		name   string
		mutate func(s *v1alpha1.ValkeyBackupSchedule)
		want   []string
	}{
		{name: "valid"},
		{name: "descriptor", mutate: func(s *v1alpha1.ValkeyBackupSchedule) { s.Spec.Schedule = "@every 6h" }},
		{name: "bad cron", mutate: func(s *v1alpha1.ValkeyBackupSchedule) { s.Spec.Schedule = "61 * * * *" },
			want: []string{"spec.schedule: Invalid value"}},
		{name: "six fields", mutate: func(s *v1alpha1.ValkeyBackupSchedule) { s.Spec.Schedule = "0 0 3 * * *" },
			want: []string{"spec.schedule: Invalid value"}},
		{name: "keep zero", mutate: func(s *v1alpha1.ValkeyBackupSchedule) { s.Spec.Retention.KeepLast = ptr.To[int32](0) },
			want: []string{"spec.retention.keepLast: Invalid value"}},
		{name: "negative age", mutate: func(s *v1alpha1.ValkeyBackupSchedule) {
			s.Spec.Retention.MaxAge = &metav1.Duration{Duration: -time.Hour}
		}, want: []string{"spec.retention.maxAge: Invalid value"}},
		{name: "long name", mutate: func(s *v1alpha1.ValkeyBackupSchedule) { s.Name = strings.Repeat("a", 37) },
			want: []string{"metadata.name: Too long"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := base()
			if c.mutate != nil {
				c.mutate(s)
			}
			checkErrs(t, ValidateBackupSchedule(s), c.want)
		})
	}
}

func dataSource(ds *v1alpha1.DataSource) func(c *v1alpha1.ValkeyCluster) {
	return func(c *v1alpha1.ValkeyCluster) { c.Spec.DataSource = ds }
}

func TestValidateDataSource(t *testing.T) {
	store := validStore()
	store.Prefix = ""
	withPrefix := validStore()
	runClusterCases(t, []clusterCase{
		{name: "by name", mutate: dataSource(&v1alpha1.DataSource{BackupName: "nightly"})},
		{name: "by path", mutate: dataSource(&v1alpha1.DataSource{ObjectStore: &store, Path: "prod/default/demo/nightly-1234abcd"})},
		{name: "both", mutate: dataSource(&v1alpha1.DataSource{BackupName: "nightly", ObjectStore: &store, Path: "x"}),
			want: []string{"spec.dataSource: Invalid value"}},
		{name: "empty", mutate: dataSource(&v1alpha1.DataSource{}),
			want: []string{"spec.dataSource.objectStore: Required value"}},
		{name: "no path", mutate: dataSource(&v1alpha1.DataSource{ObjectStore: &store}),
			want: []string{"spec.dataSource.path: Required value"}},
		{name: "prefix set", mutate: dataSource(&v1alpha1.DataSource{ObjectStore: &withPrefix, Path: "x"}),
			want: []string{"spec.dataSource.objectStore.prefix: Forbidden"}},
	})
}

func TestValidateDataSourceUpdate(t *testing.T) {
	a := dataSource(&v1alpha1.DataSource{BackupName: "a"})
	runUpdateCases(t, []updateCase{
		{name: "kept", mutateOld: a, mutateNew: a},
		{name: "added", mutateNew: a, want: []string{"spec.dataSource: Forbidden: a data source can only be set when the cluster is created"}},
		{name: "removed", mutateOld: a, want: []string{"spec.dataSource: Forbidden: dataSource cannot be removed"}},
		{name: "changed", mutateOld: a, mutateNew: dataSource(&v1alpha1.DataSource{BackupName: "b"}),
			want: []string{"spec.dataSource: Forbidden: dataSource is immutable"}},
	})
}

func TestRestorePending(t *testing.T) {
	c := validCluster()
	if v1alpha1.RestorePending(c) {
		t.Fatal("a cluster without data source is pending")
	}
	dataSource(&v1alpha1.DataSource{BackupName: "a"})(c)
	if !v1alpha1.RestorePending(c) {
		t.Fatal("a new cluster with a data source is not pending")
	}
	c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionRestored, Status: metav1.ConditionTrue}}
	if v1alpha1.RestorePending(c) {
		t.Fatal("a restored cluster is pending")
	}
}
