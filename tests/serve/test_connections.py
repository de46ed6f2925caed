"""A flood of connections cannot take the board down: small caps on connections in all and from one
address (the server's open files stay bounded), a request whose headers or body stop arriving is
dropped after the read timeout, and repeated log lines are held back with a count."""

import io
import logging
import os
import socket
import time

import httpx
import pytest
from board_support import Server

from rueval.serve.logs import RepeatFilter, configure_logging

# a multipart upload that declares 1,000 bytes of body and sends 100, as the flood's did
HALF_UPLOAD = (
    b"POST /api/submissions HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
    b"Content-Length: 1000\r\n\r\n" + b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\n\r\n'
)


def connect(port: int, source: str, sent: bytes = b"") -> socket.socket:
    """A connection from one loopback address (127.0.0.0/8 is all this machine's) to the server."""
    connection = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    if sent:
        connection.sendall(sent)
    return connection


def answer_of(connection: socket.socket) -> bytes:
    """What the server sends until it closes the connection."""
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    connection.close()
    return received


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def get_from(url: str, source: str, path: str = "/") -> httpx.Response:
    with httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=10) as client:
        return client.get(url + path)


@pytest.mark.slow
def test_caps_per_address_and_in_all_refuse_with_503_and_the_read_timeout_frees_their_places(
    gold_dir, tmp_path, servers
):
    server = Server(
        gold_dir, tmp_path / "store", None, "--workers", "0",
        "--max-connections", "6", "--max-connections-per-address", "3", "--read-timeout", "3",
    )  # fmt: skip
    servers.append(server)
    files_before = open_files(server.process.pid)
    stalled = [connect(server.port, "127.0.0.1", HALF_UPLOAD + b"x" * 30) for _ in range(3)]
    time.sleep(0.3)
    over = answer_of(connect(server.port, "127.0.0.1"))
    assert over.startswith(b"HTTP/1.1 503") and b"3 connections open from 127.0.0.1" in over
    started = time.monotonic()
    assert get_from(server.url, "127.0.0.2").status_code == 200  # another address is served at once
    assert time.monotonic() - started < 3
    idle = [connect(server.port, "127.0.0.3") for _ in range(3)]  # connected, nothing sent
    time.sleep(0.3)
    full = answer_of(connect(server.port, "127.0.0.4"))
    assert full.startswith(b"HTTP/1.1 503") and b"6 connections open, the board's limit" in full
    for connection in stalled:
        dropped = answer_of(connection)  # 408 once the body stopped arriving for 3 s, then closed
        assert dropped.startswith(b"HTTP/1.1 408") and b"body stopped arriving for 3 s" in dropped
    assert [answer_of(connection) for connection in idle] == [b""] * 3  # closed: no request within 3 s
    assert time.monotonic() - started < 10  # the read timeout, not the client, ended them
    assert get_from(server.url, "127.0.0.1").status_code == 200  # the places are free again
    # a flood from one address: its connections beyond the cap are closed at once and hold no file
    flood = [connect(server.port, "127.0.0.5", HALF_UPLOAD) for _ in range(200)]
    time.sleep(0.5)
    assert open_files(server.process.pid) <= files_before + 3 + 2
    for connection in flood:
        connection.close()
    log = server.read_log(tail=None)
    assert "refused a connection from 127.0.0.5" in log and "Traceback" not in log
    assert log.count("refused a connection from") <= 50 + 2  # held back past 50 in 10 s


@pytest.mark.slow
def test_a_trusted_proxys_connections_carry_every_user_and_count_only_against_the_total(gold_dir, tmp_path, servers):
    """Behind a reverse proxy every connection comes from the proxy: the per-address cap would make
    the board one address's; the proxy's connections count against --max-connections only."""
    server = Server(
        gold_dir, tmp_path / "store", None, "--workers", "0", "--trusted-proxy", "127.0.0.6",
        "--max-connections", "8", "--max-connections-per-address", "2", "--read-timeout", "5",
    )  # fmt: skip
    servers.append(server)
    held = [connect(server.port, "127.0.0.6") for _ in range(4)]  # four users' keep-alive connections
    time.sleep(0.3)
    assert get_from(server.url, "127.0.0.6").status_code == 200  # the fifth from the proxy is served
    others = [connect(server.port, "127.0.0.7") for _ in range(2)]
    time.sleep(0.3)
    over = answer_of(connect(server.port, "127.0.0.7"))  # any other address keeps its cap
    assert over.startswith(b"HTTP/1.1 503") and b"2 connections open from 127.0.0.7" in over
    held += [connect(server.port, "127.0.0.6") for _ in range(2)]  # 4 + 2 + 2: the board's 8
    time.sleep(0.3)
    full = answer_of(connect(server.port, "127.0.0.6"))  # the total cap holds for the proxy too
    assert full.startswith(b"HTTP/1.1 503") and b"8 connections open, the board's limit" in full
    for connection in held + others:
        connection.close()


def test_more_connections_than_the_process_may_open_files_is_refused_before_anything_starts(cli, gold_dir, tmp_path):
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard limit on open files here")
    result = cli("serve", "--gold", gold_dir, "--store", tmp_path / "board", "--max-connections", hard)
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"error: --max-connections {hard}: this process may open at most {hard} files (ulimit -Hn); "
        f"give at most {hard - 100}\n"
    )
    assert not (tmp_path / "board").exists()


def test_repeated_lines_are_held_back_and_counted_a_traceback_of_a_kind_written_once_per_window():
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.addFilter(RepeatFilter(window_s=0.5, burst=3))
    logger = logging.getLogger("rueval.test.repeats")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        for i in range(100):
            logger.warning("refused a connection from %s", f"10.0.0.{i}")
        for _ in range(10):
            try:
                raise OSError(24, "Too many open files")
            except OSError:
                logger.exception("accept failed")
        logger.warning("another kind of line")
        time.sleep(0.6)
        logger.warning("refused a connection from %s", "10.0.1.1")
    finally:
        logger.removeHandler(handler)
    lines = written.getvalue().splitlines()
    assert [line for line in lines if line.startswith("refused")] == [
        "refused a connection from 10.0.0.0",
        "refused a connection from 10.0.0.1",
        "refused a connection from 10.0.0.2",
        "refused a connection from 10.0.1.1 [97 more like this in the 0.5 s before were not logged]",
    ]
    assert lines.count("accept failed") == 1 and written.getvalue().count("Traceback") == 1
    assert "another kind of line" in lines


def test_each_handler_of_the_service_s_log_counts_its_own_lines(monkeypatch):
    """configure_logging's filters are one per handler: a traceback written to one is not held back from the next."""
    outputs = [io.StringIO(), io.StringIO()]
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [logging.StreamHandler(output) for output in outputs])
    configure_logging()
    try:
        raise ValueError("once")
    except ValueError:
        logging.getLogger("rueval.test.handlers").exception("a failure")
    assert [output.getvalue().count("Traceback") for output in outputs] == [1, 1]
