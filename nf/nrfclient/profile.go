package nrfclient

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/free5gc/openapi/models"

	"github.com/tern5g/tern/sbi"
	"github.com/tern5g/tern/sbi/ops"
)

// ProfileFor returns the profile (TS 29.510 §6.1.6.2.2) of an NF instance
// that serves every named service at apiRoot (TS 29.501 §4.4.1):
// "scheme://host[:port][/prefix]", e.g. "http://10.0.0.1:8000". An IP host
// becomes the services' ipEndPoints and the profile's ipv4Addresses (or
// ipv6Addresses), a name their fqdn, a path their apiPrefix: what a
// consumer needs to build the URI of a call (APIRoot reads it back).
// Add the NF's infos (smfInfo, udmInfo ...), sNssais and plmnList to the
// result as it serves them.
func ProfileFor(nfType sbi.NFType, instanceID, apiRoot string, services ...models.Nrf_NFMgmt_ServiceName) (*models.Nrf_NFMgmt_NFProfile, error) {
	if nfType == "" || instanceID == "" {
		return nil, fmt.Errorf("nrfclient: profile: nfType %q and instanceID %q are required", nfType, instanceID)
	}
	u, err := url.Parse(apiRoot)
	if err != nil {
		return nil, fmt.Errorf("nrfclient: profile %s: apiRoot: %w", instanceID, err)
	}
	scheme := models.UriScheme(u.Scheme)
	if scheme != models.UriScheme_HTTP && scheme != models.UriScheme_HTTPS {
		return nil, fmt.Errorf("nrfclient: profile %s: apiRoot %q: scheme must be http or https", instanceID, apiRoot)
	}
	if u.Hostname() == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("nrfclient: profile %s: apiRoot %q: want scheme://host[:port][/prefix]", instanceID, apiRoot)
	}
	var port int32
	if ps := u.Port(); ps != "" {
		n, err := strconv.ParseUint(ps, 10, 16)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("nrfclient: profile %s: apiRoot %q: bad port", instanceID, apiRoot)
		}
		port = int32(n)
	}
	p := &models.Nrf_NFMgmt_NFProfile{
		NfInstanceId: instanceID,
		NfType:       nfType,
		NfStatus:     models.Nrf_NFMgmt_NFStatus_REGISTERED,
	}
	var ep *models.Nrf_NFMgmt_IpEndPoint
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
		ep = &models.Nrf_NFMgmt_IpEndPoint{Transport: models.Nrf_NFMgmt_TransportProtocol_TCP, Port: port}
		if ip.Is4() || ip.Is4In6() {
			ep.Ipv4Address = ip.Unmap().String()
			p.Ipv4Addresses = []string{ep.Ipv4Address}
		} else {
			ep.Ipv6Address = ip.String()
			p.Ipv6Addresses = []string{ep.Ipv6Address}
		}
	} else {
		p.Fqdn = u.Hostname()
		if port != 0 {
			// An endpoint with a port and no address: the FQDN at that
			// port (how NFs announce a non-default port with an FQDN).
			ep = &models.Nrf_NFMgmt_IpEndPoint{Transport: models.Nrf_NFMgmt_TransportProtocol_TCP, Port: port}
		}
	}
	prefix := strings.TrimRight(u.EscapedPath(), "/")
	for _, name := range services {
		// TS 29.510 requires versions: the one tern serves the API at, as
		// the operation table's paths say, and the 3GPP file it follows.
		inURI, full, ok := ops.ServiceVersion(string(name))
		if !ok {
			return nil, fmt.Errorf("nrfclient: profile %s: tern serves no operation of %s", instanceID, name)
		}
		s := models.Nrf_NFMgmt_NFService{
			ServiceInstanceId: string(name), // unique within the instance, which is all TS 29.510 asks
			ServiceName:       name,
			Versions:          []models.Nrf_NFMgmt_NFServiceVersion{{ApiVersionInUri: inURI, ApiFullVersion: full}},
			Scheme:            scheme,
			NfServiceStatus:   models.Nrf_NFMgmt_NFServiceStatus_REGISTERED,
			ApiPrefix:         prefix,
			Fqdn:              p.Fqdn,
		}
		if ep != nil {
			s.IpEndPoints = []models.Nrf_NFMgmt_IpEndPoint{*ep}
		}
		p.NfServices = append(p.NfServices, s)
	}
	return p, nil
}

// APIRoot is the apiRoot (TS 29.501 §4.4.1) at which the discovered
// profile p serves service: from the service's first ipEndPoint with an
// address, else its fqdn (at the port of an ipEndPoint without address),
// else the profile's fqdn or first IP address (TS 29.510
// §6.1.6.2.3: ipEndPoints and fqdn of NFService, falling back to those of
// the NFProfile, §6.1.6.2.2), with the service's scheme (http when absent) and
// apiPrefix. A port left out is the scheme's default.
//
// Departure: TS 29.510 makes apiPrefix a path prefix, but deployed NFs
// (free5GC's, for one) put their whole apiRoot there,
// "http://10.0.0.8:8000"; such an absolute http(s) URI is taken as the
// apiRoot, as those NFs' own consumers take it.
func APIRoot(p *models.Nrf_NFDisc_NFProfile, service models.Nrf_NFMgmt_ServiceName) (string, error) {
	if p == nil {
		return "", fmt.Errorf("nrfclient: apiRoot of %s: no profile", service)
	}
	for _, s := range services(p) {
		if s.ServiceName != service || (s.NfServiceStatus != "" && s.NfServiceStatus != models.Nrf_NFMgmt_NFServiceStatus_REGISTERED) {
			continue
		}
		if root, ok := absoluteAPIPrefix(s.ApiPrefix); ok {
			return root, nil
		}
		var host string
		var port int32
		for _, ep := range s.IpEndPoints {
			if ep.Ipv4Address != "" {
				host, port = ep.Ipv4Address, ep.Port
			} else if ep.Ipv6Address != "" {
				host, port = ep.Ipv6Address, ep.Port
			} else if port == 0 {
				port = ep.Port // a port for the FQDN
			}
			if host != "" {
				break
			}
		}
		switch {
		case host != "":
		case s.Fqdn != "":
			host = s.Fqdn
		case p.Fqdn != "":
			host = p.Fqdn
		case len(p.Ipv4Addresses) > 0:
			host = p.Ipv4Addresses[0]
		case len(p.Ipv6Addresses) > 0:
			host = p.Ipv6Addresses[0]
		default:
			continue
		}
		scheme := string(s.Scheme)
		if scheme == "" {
			scheme = string(models.UriScheme_HTTP)
		}
		authority := host
		if port > 0 {
			authority = net.JoinHostPort(host, strconv.Itoa(int(port)))
		} else if strings.Contains(host, ":") {
			authority = "[" + host + "]" // an IPv6 literal
		}
		prefix := strings.TrimRight(s.ApiPrefix, "/")
		if prefix != "" && !strings.HasPrefix(prefix, "/") {
			prefix = "/" + prefix
		}
		return scheme + "://" + authority + prefix, nil
	}
	return "", fmt.Errorf("nrfclient: NF instance %s offers no %s service with an address", p.NfInstanceId, service)
}

// absoluteAPIPrefix reads an apiPrefix that is a whole apiRoot,
// "scheme://host[:port][/path]", without its trailing "/"; ok is false for
// a path prefix or a URI that is not an http(s) apiRoot.
func absoluteAPIPrefix(prefix string) (root string, ok bool) {
	if !strings.Contains(prefix, "://") {
		return "", false
	}
	u, err := url.Parse(prefix)
	if err != nil || (u.Scheme != string(models.UriScheme_HTTP) && u.Scheme != string(models.UriScheme_HTTPS)) ||
		u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	return strings.TrimRight(prefix, "/"), true
}

// offersVersion reports whether the service entries of p named service
// list apiVersionInUri v, or list no version at all.
func offersVersion(p *models.Nrf_NFDisc_NFProfile, service models.Nrf_NFMgmt_ServiceName, v string) bool {
	for _, s := range services(p) {
		if s.ServiceName != service {
			continue
		}
		if len(s.Versions) == 0 || slices.ContainsFunc(s.Versions, func(sv models.Nrf_NFMgmt_NFServiceVersion) bool { return sv.ApiVersionInUri == v }) {
			return true
		}
	}
	return false
}

// services lists nfServices, then nfServiceList (the Rel-16 map form).
func services(p *models.Nrf_NFDisc_NFProfile) []models.Nrf_NFDisc_NFService {
	out := append([]models.Nrf_NFDisc_NFService(nil), p.NfServices...)
	keys := make([]string, 0, len(p.NfServiceList))
	for k := range p.NfServiceList {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, p.NfServiceList[k])
	}
	return out
}
