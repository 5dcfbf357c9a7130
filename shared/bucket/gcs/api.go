package gcs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/bucket"
)

// The JSON API, on net/http. Google's own Go packages for it
// (cloud.google.com/go/storage, and google.golang.org/api/storage/v1 under
// it) link gRPC's xDS and Envoy's protos, OpenTelemetry's metrics SDK and,
// through their transport's enterprise-certificate client, net/rpc and the
// template packages: 16.5 MB more in the exporter's arm64 binary, whose
// peak memory is within a few MiB of its Lambda's. This client makes the
// few requests the driver needs, as documented at
// https://cloud.google.com/storage/docs/json_api/v1 and
// https://cloud.google.com/storage/docs/performing-resumable-uploads.

// Object is the part of an object resource the driver reads.
type Object struct {
	Name            string            `json:"name"`
	Size            int64             `json:"size,string"`
	ContentType     string            `json:"contentType"`
	ContentEncoding string            `json:"contentEncoding"`
	Metadata        map[string]string `json:"metadata"`
	CRC32C          string            `json:"crc32c"`
	MD5Hash         string            `json:"md5Hash"`
	ETag            string            `json:"etag"`
	Generation      int64             `json:"generation,string"`
	KMSKeyName      string            `json:"kmsKeyName"`
}

// Error is the JSON API's error.
type Error struct {
	Code    int
	Message string
	Reason  string
}

func (e *Error) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("gcs: %d %s (%s)", e.Code, e.Message, e.Reason)
	}
	return fmt.Sprintf("gcs: %d %s", e.Code, e.Message)
}

// apiError reads the error a response carries.
func apiError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Errors  []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
		} `json:"error"`
	}
	out := &Error{Code: resp.StatusCode, Message: strings.TrimSpace(string(body))}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		out.Message = e.Error.Message
		if len(e.Error.Errors) > 0 {
			out.Reason = e.Error.Errors[0].Reason
		}
	}
	if out.Message == "" {
		out.Message = http.StatusText(resp.StatusCode)
	}
	return out
}

// retryable says whether a request that failed so may be sent again: GCS
// asks for retries of 408, 429 and 5xx, and of broken connections
// (https://cloud.google.com/storage/docs/retry-strategy).
func retryable(err error, resp *http.Response) bool {
	if err != nil {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	return resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
}

// Attempts is how many times a request is sent before its failure is
// returned.
const Attempts = 4

// do sends the request build makes (again for each attempt, with body
// rewound), retrying what GCS says may be retried with exponential
// backoff, and returns the response of the first attempt that is not to
// be retried. The caller closes its body.
func (c *Client) do(ctx context.Context, build func() (*http.Request, error)) (*http.Response, error) {
	var lastErr error
	for attempt := range Attempts {
		if attempt > 0 {
			d := time.Duration(100<<attempt)*time.Millisecond + time.Duration(rand.Int64N(int64(100*time.Millisecond)))
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(d):
			}
		}
		req, err := build()
		if err != nil {
			return nil, err
		}
		resp, err := c.hc.Do(req.WithContext(ctx))
		if !retryable(err, resp) {
			return resp, err
		}
		if err == nil {
			lastErr = apiError(resp)
			resp.Body.Close()
		} else {
			lastErr = err
		}
	}
	return nil, lastErr
}

// objectURL is the JSON API URL of an object, with query q.
func (c *Client) objectURL(bucketName, key string, q url.Values) string {
	u := c.base + "b/" + url.PathEscape(bucketName) + "/o/" + url.PathEscape(key)
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// attrs reads an object's resource.
func (c *Client) attrs(ctx context.Context, bucketName, key string) (*Object, error) {
	resp, err := c.do(ctx, func() (*http.Request, error) {
		return http.NewRequest(http.MethodGet, c.objectURL(bucketName, key, nil), nil)
	})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, apiError(resp)
	}
	var o Object
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&o); err != nil {
		return nil, fmt.Errorf("gcs: object resource: %w", err)
	}
	return &o, nil
}

// media opens an object's bytes, or the range rng of them.
func (c *Client) media(ctx context.Context, bucketName, key string, rng bucket.Range) (io.ReadCloser, int64, error) {
	resp, err := c.do(ctx, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodGet, c.objectURL(bucketName, key, url.Values{"alt": {"media"}}), nil)
		if err != nil {
			return nil, err
		}
		switch {
		case rng.Offset < 0:
			req.Header.Set("Range", fmt.Sprintf("bytes=%d", rng.Offset))
		case rng.Length > 0:
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", rng.Offset, rng.Offset+rng.Length-1))
		case rng.Offset > 0:
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-", rng.Offset))
		}
		return req, nil
	})
	if err != nil {
		return nil, 0, err
	}
	switch {
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && rng.Offset < 0:
		resp.Body.Close() // an empty object has no last bytes
		return io.NopCloser(bytes.NewReader(nil)), 0, nil
	case resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent:
		defer resp.Body.Close()
		return nil, 0, apiError(resp)
	case rng != (bucket.Range{}) && resp.StatusCode == http.StatusOK && rng.Offset != 0:
		resp.Body.Close()
		return nil, 0, fmt.Errorf("gcs: the store ignored the range of %s", key)
	}
	return resp.Body, resp.ContentLength, nil
}

// remove deletes an object; an absent one is no error.
func (c *Client) remove(ctx context.Context, bucketName, key string, q url.Values) error {
	resp, err := c.do(ctx, func() (*http.Request, error) {
		return http.NewRequest(http.MethodDelete, c.objectURL(bucketName, key, q), nil)
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusNoContent, http.StatusNotFound:
		return nil
	}
	return apiError(resp)
}

// listPage is one page of a listing.
type listPage struct {
	Items         []Object `json:"items"`
	Prefixes      []string `json:"prefixes"`
	NextPageToken string   `json:"nextPageToken"`
}

// list calls fn for every page of the objects under prefix (with
// delimiter, the folders too).
func (c *Client) list(ctx context.Context, bucketName, prefix, delimiter string, fn func(*listPage) error) error {
	token := ""
	for {
		q := url.Values{"prefix": {prefix}, "fields": {"items(name,size),prefixes,nextPageToken"}}
		if delimiter != "" {
			q.Set("delimiter", delimiter)
		}
		if token != "" {
			q.Set("pageToken", token)
		}
		u := c.base + "b/" + url.PathEscape(bucketName) + "/o?" + q.Encode()
		resp, err := c.do(ctx, func() (*http.Request, error) { return http.NewRequest(http.MethodGet, u, nil) })
		if err != nil {
			return err
		}
		var page listPage
		if resp.StatusCode != http.StatusOK {
			err = apiError(resp)
		} else {
			err = json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&page)
		}
		resp.Body.Close()
		if err != nil {
			return err
		}
		if err := fn(&page); err != nil {
			return err
		}
		if page.NextPageToken == "" {
			return nil
		}
		token = page.NextPageToken
	}
}
