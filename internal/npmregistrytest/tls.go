package npmregistrytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"
)

// NewTLS starts a registry served over TLS, as a company's mirror is,
// with a certificate signed by an authority made for it (CA), which no
// system trusts: a client reaches it only when told to trust CA
// (NODE_EXTRA_CA_CERTS, npm's cafile or ca). name, when not "", is the
// name the registry is known by (its URL's host, a name no resolver
// knows: a proxy that maps it, NewProxy, is then the only way to it);
// the certificate names it and 127.0.0.1.
func NewTLS(t TB, cache *Cache, name string) *Registry {
	t.Helper()
	ca, cert, err := authority(name)
	if err != nil {
		t.Fatalf("npmregistrytest: a certificate: %v", err)
	}
	r := newRegistry(t, cache)
	r.CA = ca
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	r.srv.StartTLS()
	r.started()
	if name != "" {
		_, port, _ := net.SplitHostPort(r.Addr)
		r.Host = net.JoinHostPort(name, port)
		r.URL = "https://" + r.Host + "/"
	}
	return r
}

// authority makes an authority (its certificate, PEM) and a server
// certificate it signed for name and 127.0.0.1, valid for a day.
func authority(name string) (caPEM []byte, cert tls.Certificate, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "npmregistrytest authority"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, cert, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, cert, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "npmregistrytest registry"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	if name != "" && net.ParseIP(name) == nil {
		tmpl.DNSNames = []string{strings.ToLower(name)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, cert, err
	}
	cert = tls.Certificate{Certificate: [][]byte{der, caDER}, PrivateKey: key}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), cert, nil
}
