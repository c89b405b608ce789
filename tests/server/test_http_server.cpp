// The HTTP server on a loopback socket with a small handler: deadlines, pipelining, the
// connection cap, refusals that reach the client, streaming, and a client that leaves.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "http_server.h"

namespace vkllm::http {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A server on a free port, run on its own thread for the test's life.
class LiveServer {
public:
    explicit LiveServer(ServerOptions options, Handler handler = nullptr) {
        options.host = "127.0.0.1";
        options.port = 0;
        if (!handler)
            handler = [](const Request& r, Responder& res) { res.send(200, "text/plain", r.method + " " + r.path + " " + r.body); };
        server_ = std::make_unique<Server>(options, handler);
        port_ = server_->listen();
        thread_ = std::thread([this] { server_->run(); });
    }
    ~LiveServer() {
        server_->stop();
        thread_.join();
    }
    int port() const { return port_; }
    Server& server() { return *server_; }

private:
    std::unique_ptr<Server> server_;
    int port_ = 0;
    std::thread thread_;
};

int connect_to(int port) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return fd;
}

void send_text(int fd, const std::string& text) {
    ASSERT_EQ(send(fd, text.data(), text.size(), MSG_NOSIGNAL), ssize_t(text.size()));
}

// Everything the server sends until it closes, or until `limit` passes.
std::string read_until_closed(int fd, std::chrono::milliseconds limit = 5000ms) {
    std::string out;
    const auto until = Clock::now() + limit;
    char buf[4096];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        const int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count());
        if (left <= 0 || poll(&p, 1, left) <= 0) break;
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, size_t(n));
    }
    return out;
}

// Reads until `text` has appeared `count` times (or 5 s).
std::string read_until(int fd, const std::string& text, int count = 1) {
    std::string out;
    const auto until = Clock::now() + 5s;
    char buf[4096];
    auto seen = [&] {
        int n = 0;
        for (size_t at = out.find(text); at != std::string::npos; at = out.find(text, at + 1)) ++n;
        return n;
    };
    while (seen() < count && Clock::now() < until) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) continue;
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, size_t(n));
    }
    return out;
}

std::string post(const std::string& path, const std::string& body) {
    return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

TEST(HttpServer, AnswersPipelinedRequestsInOrder) {
    LiveServer live({});
    const int fd = connect_to(live.port());
    send_text(fd, post("/a", "one") + post("/b", "two") + post("/c", "three") + "GET /d HTTP/1.1\r\nHost: x\r\n\r\n");
    const std::string got = read_until(fd, "GET /d ");
    const size_t a = got.find("POST /a one"), b = got.find("POST /b two"), c = got.find("POST /c three"),
                 d = got.find("GET /d ");
    ASSERT_NE(a, std::string::npos) << got;
    ASSERT_NE(d, std::string::npos) << got;
    EXPECT_LT(a, b);
    EXPECT_LT(b, c);
    EXPECT_LT(c, d);
    close(fd);
}

TEST(HttpServer, ASlowRequestGets408AtItsDeadlineAndOthersAreServed) {
    ServerOptions o;
    o.request_timeout = 600ms;
    LiveServer live(o);
    std::vector<int> slow;
    for (int i = 0; i < 20; ++i) {
        slow.push_back(connect_to(live.port()));
        send_text(slow.back(), "G");  // a header, one byte at a time, never finished
    }
    // Every slow client holds only its own connection: a new one is answered at once.
    const auto started = Clock::now();
    const int fd = connect_to(live.port());
    send_text(fd, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    EXPECT_NE(read_until_closed(fd).find("200 OK"), std::string::npos);
    EXPECT_LT(Clock::now() - started, 500ms);
    close(fd);
    for (int s : slow) {
        send_text(s, "E");
        const std::string got = read_until_closed(s, 3000ms);
        EXPECT_EQ(got.rfind("HTTP/1.1 408 ", 0), 0u) << got;
        close(s);
    }
}

TEST(HttpServer, AnIdleKeptAliveConnectionIsClosed) {
    ServerOptions o;
    o.idle_timeout = 300ms;
    LiveServer live(o);
    const int fd = connect_to(live.port());
    send_text(fd, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    const auto started = Clock::now();
    const std::string got = read_until_closed(fd, 3000ms);
    EXPECT_NE(got.find("GET /a"), std::string::npos);
    EXPECT_LT(Clock::now() - started, 2000ms);  // closed by the server, not by the read limit
    close(fd);
}

TEST(HttpServer, RefusalsReachTheClientWithTheirBody) {
    ServerOptions o;
    o.error_body = [](int status, const std::string& message) {
        return std::make_pair(std::string("application/json"), "{\"status\":" + std::to_string(status) + ",\"m\":\"" +
                                                                   message.substr(0, 10) + "\"}");
    };
    LiveServer live(o);
    struct Case {
        std::string bytes;
        const char* status;
    } cases[] = {
        {"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", "400"},
        {"POST /x HTTP/1.1\r\nHost: x\r\n\r\n", "411"},
        {"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n", "413"},
        {"GET / HTTP/1.1\r\n" + std::string(40000, 'a') + ": b\r\n\r\n", "431"},
    };
    for (const Case& c : cases) {
        const int fd = connect_to(live.port());
        send_text(fd, c.bytes);
        const std::string got = read_until_closed(fd);
        EXPECT_EQ(got.rfind(std::string("HTTP/1.1 ") + c.status + " ", 0), 0u) << got.substr(0, 200);
        EXPECT_NE(got.find(std::string("{\"status\":") + c.status), std::string::npos) << got;
        EXPECT_NE(got.find("Connection: close"), std::string::npos);
        close(fd);
    }
}

TEST(HttpServer, ATooLargeHeaderStreamIsCutAtTheLimit) {
    LiveServer live({});
    const int fd = connect_to(live.port());
    send_text(fd, "GET / HTTP/1.1\r\n");
    // The client keeps sending header lines; the server answers 431 and stops reading soon.
    const std::string line = "X-Filler: " + std::string(1000, 'a') + "\r\n";
    std::string got;
    for (int i = 0; i < 30'000 && got.empty(); ++i) {
        if (send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) break;
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 0) > 0) got = read_until_closed(fd, 1000ms);
    }
    if (got.empty()) got = read_until_closed(fd);
    EXPECT_EQ(got.rfind("HTTP/1.1 431 ", 0), 0u) << got.substr(0, 200);
    close(fd);
}

TEST(HttpServer, PastTheConnectionCapANewClientGets503) {
    ServerOptions o;
    o.max_connections = 2;
    LiveServer live(o);
    const int a = connect_to(live.port()), b = connect_to(live.port());
    for (int i = 0; i < 100 && live.server().connections() < 2; ++i) std::this_thread::sleep_for(10ms);
    const int c = connect_to(live.port());
    const std::string got = read_until_closed(c);
    EXPECT_EQ(got.rfind("HTTP/1.1 503 ", 0), 0u) << got;
    EXPECT_NE(got.find("Retry-After: 1"), std::string::npos);
    close(a);
    close(b);
    close(c);
    // Once they are gone, a client is served again.
    for (int i = 0; i < 100 && live.server().connections() > 0; ++i) std::this_thread::sleep_for(10ms);
    const int d = connect_to(live.port());
    send_text(d, "GET /again HTTP/1.1\r\nConnection: close\r\n\r\n");
    EXPECT_NE(read_until_closed(d).find("GET /again"), std::string::npos);
    close(d);
}

TEST(HttpServer, StreamsChunksAndSeesAClientLeave) {
    std::atomic<bool> saw_gone{false};
    LiveServer live({}, [&](const Request& r, Responder& res) {
        ASSERT_TRUE(res.begin_stream(200, "text/event-stream"));
        if (r.path == "/short") {
            res.write("data: 1\n\n");
            res.write("data: 2\n\n");
            return res.end_stream();
        }
        for (int i = 0; i < 500 && !res.client_gone(); ++i) {
            res.write("data: tick\n\n");
            std::this_thread::sleep_for(10ms);
        }
        saw_gone = res.client_gone();
        res.end_stream();
    });
    const int fd = connect_to(live.port());
    send_text(fd, "GET /short HTTP/1.1\r\nHost: x\r\n\r\n");
    const std::string got = read_until(fd, "0\r\n\r\n");
    EXPECT_NE(got.find("Transfer-Encoding: chunked"), std::string::npos);
    EXPECT_NE(got.find("9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n0\r\n\r\n"), std::string::npos) << got;
    send_text(fd, "GET /long HTTP/1.1\r\nHost: x\r\n\r\n");
    read_until(fd, "tick");
    close(fd);
    for (int i = 0; i < 300 && !saw_gone; ++i) std::this_thread::sleep_for(10ms);
    EXPECT_TRUE(saw_gone.load());
}

TEST(HttpServer, AHandlerThatThrowsGives500AndTheServerGoesOn) {
    LiveServer live({}, [](const Request& r, Responder& res) {
        if (r.path == "/throw") throw std::runtime_error("boom");
        if (r.path == "/silent") return;
        res.send(200, "text/plain", "fine");
    });
    const int fd = connect_to(live.port());
    send_text(fd, "GET /throw HTTP/1.1\r\n\r\nGET /silent HTTP/1.1\r\n\r\nGET /ok HTTP/1.1\r\nConnection: close\r\n\r\n");
    const std::string got = read_until_closed(fd);
    EXPECT_EQ(got.rfind("HTTP/1.1 500 ", 0), 0u) << got;
    EXPECT_NE(got.find("boom"), std::string::npos);
    EXPECT_NE(got.find("fine"), std::string::npos) << got;
    close(fd);
}

TEST(HttpServer, StopEndsConnectionsBetweenRequests) {
    auto live = std::make_unique<LiveServer>(ServerOptions{});
    const int fd = connect_to(live->port());
    send_text(fd, "GET /a HTTP/1.1\r\n\r\n");
    read_until(fd, "GET /a");
    const auto started = Clock::now();
    live.reset();  // stop() and run()'s return wait for the open connection to end
    EXPECT_LT(Clock::now() - started, 1000ms);
    close(fd);
}

}  // namespace
}  // namespace vkllm::http
