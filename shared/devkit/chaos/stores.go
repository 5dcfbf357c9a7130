package chaos

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket"
	"github.com/daybook-dev/daybook/shared/bucket/azure"
	"github.com/daybook-dev/daybook/shared/bucket/gcs"
	"github.com/daybook-dev/daybook/shared/devkit/azurite"
	"github.com/daybook-dev/daybook/shared/devkit/gcsserver"
	"github.com/daybook-dev/daybook/shared/devkit/serverproc"
)

// The other stores: fake-gcs-server and Azurite, each behind one fault
// proxy that every exporter reaches them through (the GCS and Azure
// accounts' destination endpoint is the proxy's URL; the endpoint belongs
// to the account, not to an exporter). The proxy finds which exporter sent
// a request by the connection it came on (sender), so it kills that one.
// fake-gcs-server is started with the proxy as its external URL, so a
// resumable upload's session requests come through the proxy too. The
// check reads every bucket directly, never through a proxy.
type otherStores struct {
	gcs, azure           *serverproc.Process
	gcsProxy, azureProxy *Proxy
	// buckets are the GCS and Azure accounts' buckets by name, on the
	// emulators themselves.
	buckets map[string]*bucket.Bucket
}

// startStores starts the emulators behind their proxies.
func (p *pipeline) startStores(ctx context.Context, logs string) error {
	s := &p.other
	s.buckets = map[string]*bucket.Bucket{}
	s.gcsProxy = &Proxy{Store: StoreGCS, Faults: p.faults, Sender: p.sender}
	if err := s.gcsProxy.Listen(); err != nil {
		return err
	}
	g, err := gcsserver.StartBehind(ctx, logs, s.gcsProxy.URL())
	if err != nil {
		return err
	}
	p.stop = append(p.stop, func() { _ = g.Stop() })
	s.gcs, s.gcsProxy.Target = g, g.URL
	a, err := azurite.Start(ctx, logs)
	if err != nil {
		return err
	}
	p.stop = append(p.stop, func() { _ = a.Stop() })
	s.azure = a
	s.azureProxy = &Proxy{Store: StoreAzure, Target: a.URL, Faults: p.faults, Sender: p.sender}
	for _, px := range []*Proxy{s.gcsProxy, s.azureProxy} {
		if err := px.Start(); err != nil {
			return err
		}
		p.stop = append(p.stop, func() { _ = px.Close() })
	}
	return nil
}

// pointStores sets the GCS and Azure accounts' endpoints to the proxies.
func (p *pipeline) pointStores(accts []account.Account) {
	for i := range accts {
		switch accts[i].Destination.Kind() {
		case account.StoreGCS:
			accts[i].Destination.Endpoint = p.other.gcsProxy.URL()
		case account.StoreAzure:
			accts[i].Destination.Endpoint = p.other.azureProxy.URL()
		}
	}
}

// createBucket creates d's bucket on its store and, for GCS and Azure,
// keeps the check's client of it.
func (p *pipeline) createBucket(ctx context.Context, d account.Destination) error {
	s := &p.other
	switch d.Kind() {
	case account.StoreGCS:
		if err := gcsserver.CreateBucket(ctx, s.gcs, d.Bucket); err != nil {
			return err
		}
		c, err := gcs.NewClient(ctx, gcs.Config{Endpoint: gcsserver.Endpoint(s.gcs)})
		if err != nil {
			return err
		}
		s.buckets[d.Bucket] = gcs.New(c, d.Bucket, gcs.Options{})
	case account.StoreAzure:
		if err := azurite.CreateContainer(ctx, s.azure, d.Bucket); err != nil {
			return err
		}
		key, err := container.NewSharedKeyCredential(azurite.Account, azurite.Key)
		if err != nil {
			return err
		}
		c, err := azure.NewContainerClient(azure.Config{ServiceURL: azurite.Endpoint(s.azure), Container: d.Bucket, Auth: azure.Auth{SharedKey: key}})
		if err != nil {
			return err
		}
		s.buckets[d.Bucket] = azure.New(c, d.Bucket, azure.Options{Account: azurite.Account})
	default:
		return p.createS3Bucket(ctx, d.Bucket)
	}
	return nil
}

// bucketNamed is the check's client of a bucket: a GCS or Azure account's
// on its emulator, any other on S3.
func (p *pipeline) bucketNamed(name string) *bucket.Bucket {
	if b := p.other.buckets[name]; b != nil {
		return b
	}
	return bucket.New(p.s3, name, bucket.Options{})
}

// uriOf is the URI of "<bucket>/<key>".
func (p *pipeline) uriOf(bucketKey string) string {
	b, k, _ := strings.Cut(bucketKey, "/")
	return p.bucketNamed(b).URI(k)
}

// storeBuckets lists the GCS and Azure buckets.
func (p *pipeline) storeBuckets() []string {
	var out []string
	for name := range p.other.buckets {
		out = append(out, name)
	}
	return out
}

// sender finds the exporter whose bootstrap holds the client end of c (a
// connection to a shared proxy) and returns its kill, nil if none does:
// the client socket's inode from /proc/net/tcp, then the bootstraps' open
// files.
func (p *pipeline) sender(c net.Conn) func() bool {
	inode := socketInode(c.RemoteAddr(), c.LocalAddr())
	if inode == "" {
		return nil
	}
	link := "socket:[" + inode + "]"
	for _, x := range p.exporters {
		for _, pid := range children(x.fn.Pid) {
			dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
			fds, _ := os.ReadDir(dir)
			for _, fd := range fds {
				if l, _ := os.Readlink(filepath.Join(dir, fd.Name())); l == link {
					return x.kill
				}
			}
		}
	}
	return nil
}

// socketInode is the inode of the IPv4 TCP socket whose local address is
// local and remote address remote, "" if /proc/net/tcp has none. The
// kernel prints an address as the 32-bit word in the machine's byte order
// and the port in hex.
func socketInode(local, remote net.Addr) string {
	l, ok1 := local.(*net.TCPAddr)
	r, ok2 := remote.(*net.TCPAddr)
	if !ok1 || !ok2 || l.IP.To4() == nil || r.IP.To4() == nil {
		return ""
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return ""
	}
	defer f.Close()
	want := [2]string{procAddr(l), procAddr(r)}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 9 && fields[1] == want[0] && fields[2] == want[1] {
			return fields[9]
		}
	}
	return ""
}

// procAddr is a as /proc/net/tcp prints it.
func procAddr(a *net.TCPAddr) string {
	w := binary.NativeEndian.Uint32(a.IP.To4())
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], w)
	return strings.ToUpper(hex.EncodeToString(b[:])) + fmt.Sprintf(":%04X", a.Port)
}

// objects lists the objects of bucket whose key keep accepts (nil: all)
// with their fingerprints (fingerprint).
func (p *pipeline) objects(ctx context.Context, name string, keep func(key string) bool) (map[string]string, error) {
	out := map[string]string{}
	if p.other.buckets[name] == nil {
		pg := s3.NewListObjectsV2Paginator(p.s3, &s3.ListObjectsV2Input{Bucket: &name})
		for pg.HasMorePages() {
			page, err := pg.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			for _, o := range page.Contents {
				if k := aws.ToString(o.Key); keep == nil || keep(k) {
					out[k] = aws.ToString(o.ETag) + " " + aws.ToTime(o.LastModified).Format(time.RFC3339Nano)
				}
			}
		}
		return out, nil
	}
	objs, err := p.other.buckets[name].List(ctx, "", 100_000)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if keep != nil && !keep(o.Key) {
			continue
		}
		if out[o.Key], err = p.fingerprint(ctx, name, o.Key); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fingerprint tells an object's versions apart: S3's ETag and time; on GCS
// and Azure, whose Bucket reports neither, the size and SHA-256 of its
// bytes (a rewrite with the same bytes goes unseen there).
func (p *pipeline) fingerprint(ctx context.Context, name, key string) (string, error) {
	if p.other.buckets[name] == nil {
		h, err := p.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &name, Key: &key})
		if err != nil {
			return "", err
		}
		return aws.ToString(h.ETag) + " " + aws.ToTime(h.LastModified).Format(time.RFC3339Nano), nil
	}
	b, err := p.get(ctx, name, key)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%d %x", len(b), sum), nil
}
