// Command cdc-fake-gcs is the tests' local Google Cloud Storage server: fake-gcs-server's
// in-memory storage (github.com/fsouza/fake-gcs-server, pinned in go.mod) behind the part of
// GCS's XML API that object_store (delta-rs, obstore, Sail) speaks and fake-gcs-server does not
// serve itself.
//
// fake-gcs-server answers object_store's reads (GET and HEAD of an object) but not its writes:
// an XML API object PUT, a copy (x-goog-copy-source), an XML multipart upload, a listing from
// a given name (start-after). This program serves those by calling fake-gcs-server's own JSON
// API in-process: a PUT becomes a media upload with ifGenerationMatch taken from the
// x-goog-if-generation-match header, so the create-if-absent and compare-and-swap checks a
// Delta commit relies on are made by fake-gcs-server's storage, under its lock.
//
// With -credentials DIR it also checks who calls, as GCS does with a service account: it
// makes an RSA key pair, writes a service-account key file for it (DIR/service-account.json)
// and one for a key it does not accept (DIR/unknown-service-account.json), and answers 401 to
// a request whose bearer token is neither a JWT signed by the accepted key (object_store sends
// a self-signed JWT for a service-account key) nor an access token it issued. It issues those
// at POST /token, Google's OAuth token service's JWT-bearer grant (the key file's token_uri,
// which Google's own client libraries, and so Hadoop's GCS connector, exchange a signed JWT at).
//
// GET /_cdc/requests returns the requests served so far by type (PUT, GET, HEAD, LIST,
// DELETE, POST, COPY) as JSON.
package main

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

const clientEmail = "cdc-lakehouse@local-gcs.iam.gserviceaccount.com"

type server struct {
	fake      *fakestorage.Server
	inner     http.Handler
	publicKey *rsa.PublicKey

	mu       sync.Mutex
	tokens   map[string]time.Time
	counts   map[string]int
	uploads  map[string]*multipartUpload
	uploadID int
}

type multipartUpload struct {
	bucket, object string
	parts          map[int][]byte
}

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.Int("port", 0, "port to listen on")
	bucket := flag.String("bucket", "lakehouse", "the bucket to create")
	credentials := flag.String("credentials", "", "folder to write service-account key files to; requests must then be signed")
	flag.Parse()

	listener, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		log.Fatalf("listen: %v", err)
	}
	address := listener.Addr().String()
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		NoListener: true, Scheme: "http", PublicHost: address, ExternalURL: "http://" + address,
		Writer: io.Discard,
	})
	if err != nil {
		log.Fatalf("fake-gcs-server: %v", err)
	}
	fake.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: *bucket})
	s := &server{fake: fake, inner: fake.HTTPHandler(), counts: map[string]int{}, uploads: map[string]*multipartUpload{},
		tokens: map[string]time.Time{}}
	if *credentials != "" {
		if s.publicKey, err = writeCredentials(*credentials, "http://"+address+"/token"); err != nil {
			log.Fatalf("credentials: %v", err)
		}
	}
	log.Printf("serving bucket %s on http://%s", *bucket, address)
	log.Fatal(http.Serve(listener, s))
}

// writeCredentials makes the accepted key pair and an unknown one, writes both key files, and
// returns the accepted public key.
func writeCredentials(dir, tokenURI string) (*rsa.PublicKey, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var accepted *rsa.PublicKey
	for _, name := range []string{"service-account.json", "unknown-service-account.json"} {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, err
		}
		body, err := json.Marshal(map[string]string{
			"type": "service_account", "project_id": "cdc-lakehouse-local", "private_key_id": name,
			"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
			"client_email": clientEmail, "client_id": "1", "token_uri": tokenURI,
		})
		if err != nil {
			return nil, err
		}
		tmp := filepath.Join(dir, name+".tmp")
		if err := os.WriteFile(tmp, body, 0o600); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			return nil, err
		}
		if accepted == nil {
			accepted = &key.PublicKey
		}
	}
	return accepted, nil
}

// authorized: no key configured, or the bearer token is an access token issued here and not
// expired, or a signed JWT (`signedByKey`).
func (s *server) authorized(r *http.Request) bool {
	if s.publicKey == nil {
		return true
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	s.mu.Lock()
	expiry, issued := s.tokens[token]
	s.mu.Unlock()
	if issued {
		return time.Now().Before(expiry)
	}
	return s.signedByKey(token)
}

// signedByKey: token is a JWT signed (RS256) by the accepted key, issued by its service
// account and not expired.
func (s *server) signedByKey(token string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	signature, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return false
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(s.publicKey, crypto.SHA256, digest[:], signature) != nil {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var claims struct {
		Iss string `json:"iss"`
		Exp int64  `json:"exp"`
	}
	if json.Unmarshal(raw, &claims) != nil {
		return false
	}
	return claims.Iss == clientEmail && claims.Exp > time.Now().Unix()
}

// issueToken answers the JWT-bearer grant: an access token for an assertion signed by the
// accepted key, 400 (invalid_grant) otherwise, as Google's token service does.
func (s *server) issueToken(w http.ResponseWriter, r *http.Request) {
	if r.ParseForm() != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" ||
		s.publicKey == nil || !s.signedByKey(r.PostForm.Get("assertion")) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`))
		return
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	token := "local." + base64.RawURLEncoding.EncodeToString(raw)
	s.mu.Lock()
	s.tokens[token] = time.Now().Add(time.Hour)
	s.mu.Unlock()
	body, _ := json.Marshal(map[string]any{"access_token": token, "expires_in": 3600, "token_type": "Bearer"})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (s *server) count(kind string) {
	s.mu.Lock()
	s.counts[kind]++
	s.mu.Unlock()
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/_cdc/requests" {
		s.mu.Lock()
		body, _ := json.Marshal(s.counts)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
		return
	}
	if r.URL.Path == "/token" && r.Method == http.MethodPost {
		s.issueToken(w, r)
		return
	}
	if !s.authorized(r) {
		xmlError(w, http.StatusUnauthorized, "AuthenticationRequired", "the request's credentials were not accepted")
		return
	}
	bucket, object, hasObject := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	query := r.URL.Query()
	xmlAPI := bucket != "" && bucket != "storage" && bucket != "upload" && bucket != "download" &&
		bucket != "batch" && bucket != "_internal"
	switch {
	case xmlAPI && !hasObject && r.Method == http.MethodGet:
		s.count("LIST")
		s.list(w, bucket, query)
	case xmlAPI && hasObject && r.Method == http.MethodPut && query.Has("uploadId"):
		s.count("PUT")
		s.putPart(w, r, query)
	case xmlAPI && hasObject && r.Method == http.MethodPut && r.Header.Get("x-goog-copy-source") != "":
		s.count("COPY")
		s.copyObject(w, r, bucket, object)
	case xmlAPI && hasObject && r.Method == http.MethodPut:
		s.count("PUT")
		body, err := io.ReadAll(r.Body)
		if err != nil {
			xmlError(w, http.StatusBadRequest, "InvalidRequest", err.Error())
			return
		}
		s.upload(w, bucket, object, body, r.Header.Get("Content-Type"), r.Header.Get("x-goog-if-generation-match"))
	case xmlAPI && hasObject && r.Method == http.MethodPost && query.Has("uploads"):
		s.count("POST")
		s.initiate(w, bucket, object)
	case xmlAPI && hasObject && r.Method == http.MethodPost && query.Has("uploadId"):
		s.count("POST")
		s.complete(w, r, query.Get("uploadId"))
	case xmlAPI && hasObject && r.Method == http.MethodDelete && query.Has("uploadId"):
		s.count("DELETE")
		s.mu.Lock()
		delete(s.uploads, query.Get("uploadId"))
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		s.count(r.Method)
		s.inner.ServeHTTP(w, r)
	}
}

// upload creates bucket/object through fake-gcs-server's media upload, with ifGenerationMatch
// when given; answers as GCS's XML API does (ETag and x-goog-generation headers, no body).
func (s *server) upload(w http.ResponseWriter, bucket, object string, body []byte, contentType, ifGeneration string) {
	status, attrs := s.create(bucket, object, body, contentType, ifGeneration)
	if status != http.StatusOK {
		xmlError(w, status, http.StatusText(status), "upload of "+object+" refused")
		return
	}
	w.Header().Set("ETag", strconv.Quote(attrs.Etag))
	w.Header().Set("x-goog-generation", attrs.Generation)
	w.WriteHeader(http.StatusOK)
}

type createdObject struct {
	Etag       string `json:"etag"`
	Generation string `json:"generation"`
}

func (s *server) create(bucket, object string, body []byte, contentType, ifGeneration string) (int, createdObject) {
	params := url.Values{"uploadType": {"media"}, "name": {object}}
	if ifGeneration != "" {
		params.Set("ifGenerationMatch", ifGeneration)
	}
	req := httptest.NewRequest(http.MethodPost,
		"/upload/storage/v1/b/"+url.PathEscape(bucket)+"/o?"+params.Encode(), bytes.NewReader(body))
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	s.inner.ServeHTTP(rec, req)
	var attrs createdObject
	if rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), &attrs); err != nil {
			return http.StatusInternalServerError, attrs
		}
	}
	return rec.Code, attrs
}

func (s *server) copyObject(w http.ResponseWriter, r *http.Request, bucket, object string) {
	source, err := url.PathUnescape(strings.TrimPrefix(r.Header.Get("x-goog-copy-source"), "/"))
	if err != nil {
		xmlError(w, http.StatusBadRequest, "InvalidArgument", "bad x-goog-copy-source")
		return
	}
	srcBucket, srcObject, _ := strings.Cut(source, "/")
	obj, err := s.fake.GetObject(srcBucket, srcObject)
	if err != nil {
		xmlError(w, http.StatusNotFound, "NoSuchKey", "copy source not found")
		return
	}
	status, attrs := s.create(bucket, object, obj.Content, obj.ContentType, r.Header.Get("x-goog-if-generation-match"))
	if status != http.StatusOK {
		xmlError(w, status, http.StatusText(status), "copy to "+object+" refused")
		return
	}
	w.Header().Set("x-goog-generation", attrs.Generation)
	w.Header().Set("Content-Type", "application/xml")
	_, _ = fmt.Fprintf(w, "<CopyObjectResult><ETag>%q</ETag></CopyObjectResult>", attrs.Etag)
}

type listContents struct {
	Key          string `xml:"Key"`
	Size         int64  `xml:"Size"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
}

type listResult struct {
	XMLName        xml.Name       `xml:"ListBucketResult"`
	Name           string         `xml:"Name"`
	Prefix         string         `xml:"Prefix"`
	KeyCount       int            `xml:"KeyCount"`
	Contents       []listContents `xml:"Contents"`
	CommonPrefixes []struct {
		Prefix string `xml:"Prefix"`
	} `xml:"CommonPrefixes"`
}

// list answers an XML API (S3-style, list-type=2) listing in one page: prefix, delimiter and
// start-after (exclusive).
func (s *server) list(w http.ResponseWriter, bucket string, query url.Values) {
	startAfter := query.Get("start-after")
	objects, prefixes, err := s.fake.ListObjectsWithOptions(bucket, fakestorage.ListOptions{
		Prefix: query.Get("prefix"), Delimiter: query.Get("delimiter"), StartOffset: startAfter,
	})
	if err != nil {
		xmlError(w, http.StatusNotFound, "NoSuchBucket", "no bucket "+bucket)
		return
	}
	result := listResult{Name: bucket, Prefix: query.Get("prefix")}
	for _, obj := range objects {
		if startAfter != "" && obj.Name <= startAfter {
			continue
		}
		result.Contents = append(result.Contents, listContents{
			Key: obj.Name, Size: obj.Size, LastModified: obj.Updated.UTC().Format(time.RFC3339Nano),
			ETag: strconv.Quote(obj.Etag),
		})
	}
	sort.Strings(prefixes)
	for _, p := range prefixes {
		result.CommonPrefixes = append(result.CommonPrefixes, struct {
			Prefix string `xml:"Prefix"`
		}{p})
	}
	result.KeyCount = len(result.Contents) + len(result.CommonPrefixes)
	writeXML(w, http.StatusOK, result)
}

func (s *server) initiate(w http.ResponseWriter, bucket, object string) {
	s.mu.Lock()
	s.uploadID++
	id := "upload-" + strconv.Itoa(s.uploadID)
	s.uploads[id] = &multipartUpload{bucket: bucket, object: object, parts: map[int][]byte{}}
	s.mu.Unlock()
	writeXML(w, http.StatusOK, struct {
		XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
		Bucket   string   `xml:"Bucket"`
		Key      string   `xml:"Key"`
		UploadID string   `xml:"UploadId"`
	}{Bucket: bucket, Key: object, UploadID: id})
}

func (s *server) putPart(w http.ResponseWriter, r *http.Request, query url.Values) {
	number, err := strconv.Atoi(query.Get("partNumber"))
	body, readErr := io.ReadAll(r.Body)
	if err != nil || readErr != nil {
		xmlError(w, http.StatusBadRequest, "InvalidArgument", "bad part")
		return
	}
	s.mu.Lock()
	upload, ok := s.uploads[query.Get("uploadId")]
	if ok {
		upload.parts[number] = body
	}
	s.mu.Unlock()
	if !ok {
		xmlError(w, http.StatusNotFound, "NoSuchUpload", "no such upload")
		return
	}
	sum := sha256.Sum256(body)
	w.Header().Set("ETag", strconv.Quote(fmt.Sprintf("%x", sum[:16])))
	w.WriteHeader(http.StatusOK)
}

func (s *server) complete(w http.ResponseWriter, r *http.Request, id string) {
	var request struct {
		Parts []struct {
			PartNumber int `xml:"PartNumber"`
		} `xml:"Part"`
	}
	if err := xml.NewDecoder(r.Body).Decode(&request); err != nil {
		xmlError(w, http.StatusBadRequest, "MalformedXML", err.Error())
		return
	}
	s.mu.Lock()
	upload, ok := s.uploads[id]
	delete(s.uploads, id)
	s.mu.Unlock()
	if !ok {
		xmlError(w, http.StatusNotFound, "NoSuchUpload", "no such upload")
		return
	}
	var body bytes.Buffer
	for _, part := range request.Parts {
		data, found := upload.parts[part.PartNumber]
		if !found {
			xmlError(w, http.StatusBadRequest, "InvalidPart", "part "+strconv.Itoa(part.PartNumber)+" missing")
			return
		}
		body.Write(data)
	}
	status, attrs := s.create(upload.bucket, upload.object, body.Bytes(), "", "")
	if status != http.StatusOK {
		xmlError(w, status, http.StatusText(status), "completing the upload failed")
		return
	}
	w.Header().Set("x-goog-generation", attrs.Generation)
	writeXML(w, http.StatusOK, struct {
		XMLName xml.Name `xml:"CompleteMultipartUploadResult"`
		Bucket  string   `xml:"Bucket"`
		Key     string   `xml:"Key"`
		ETag    string   `xml:"ETag"`
	}{Bucket: upload.bucket, Key: upload.object, ETag: strconv.Quote(attrs.Etag)})
}

func writeXML(w http.ResponseWriter, status int, value any) {
	body, err := xml.Marshal(value)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/xml; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}

func xmlError(w http.ResponseWriter, status int, code, message string) {
	writeXML(w, status, struct {
		XMLName xml.Name `xml:"Error"`
		Code    string   `xml:"Code"`
		Message string   `xml:"Message"`
	}{Code: code, Message: message})
}
