/* A usrsctp (libusrsctp) peer for tern's interop test: connects with SCTP
 * over UDP (RFC 6951), sends one message on stream 1 with PPID 60, prints the
 * echo it gets back with its stream and PPID, then shuts down.
 * Usage: usrsctp_peer LOCAL_UDP_PORT REMOTE_UDP_PORT REMOTE_SCTP_PORT */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <usrsctp.h>

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: %s LOCAL_UDP_PORT REMOTE_UDP_PORT REMOTE_SCTP_PORT\n", argv[0]);
		return 2;
	}
	usrsctp_init((uint16_t)atoi(argv[1]), NULL, NULL);
	struct socket *s = usrsctp_socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL, 0, NULL);
	if (s == NULL) { perror("usrsctp_socket"); return 1; }

	struct sctp_udpencaps enc;
	memset(&enc, 0, sizeof enc);
	enc.sue_address.ss_family = AF_INET;
	enc.sue_port = htons((uint16_t)atoi(argv[2]));
	if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_REMOTE_UDP_ENCAPS_PORT, &enc, sizeof enc) < 0) {
		perror("SCTP_REMOTE_UDP_ENCAPS_PORT"); return 1;
	}
	struct sctp_initmsg im;
	memset(&im, 0, sizeof im);
	im.sinit_num_ostreams = 4;
	im.sinit_max_instreams = 4;
	usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_INITMSG, &im, sizeof im);
	int on = 1;
	usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof on);
	usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof on);

	struct sockaddr_in to;
	memset(&to, 0, sizeof to);
	to.sin_family = AF_INET;
	to.sin_port = htons((uint16_t)atoi(argv[3]));
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (usrsctp_connect(s, (struct sockaddr *)&to, sizeof to) < 0) { perror("usrsctp_connect"); return 1; }

	const char *msg = "hello-from-usrsctp";
	struct sctp_sndinfo si;
	memset(&si, 0, sizeof si);
	si.snd_sid = 1;
	si.snd_ppid = htonl(60);
	if (usrsctp_sendv(s, msg, strlen(msg), NULL, 0, &si, sizeof si, SCTP_SENDV_SNDINFO, 0) < 0) {
		perror("usrsctp_sendv"); return 1;
	}

	char buf[2048];
	struct sctp_rcvinfo ri;
	socklen_t rilen = sizeof ri;
	struct sockaddr_in from;
	socklen_t fromlen = sizeof from;
	unsigned int infotype = 0;
	int flags = 0;
	memset(&ri, 0, sizeof ri);
	ssize_t n = usrsctp_recvv(s, buf, sizeof buf - 1, (struct sockaddr *)&from, &fromlen, &ri, &rilen, &infotype, &flags);
	if (n <= 0) { perror("usrsctp_recvv"); return 1; }
	buf[n] = 0;
	printf("stream=%u ppid=%u data=%s\n", ri.rcv_sid, ntohl(ri.rcv_ppid), buf);
	fflush(stdout);

	usrsctp_close(s);
	for (int i = 0; i < 50 && usrsctp_finish() != 0; i++) usleep(100000);
	return 0;
}
