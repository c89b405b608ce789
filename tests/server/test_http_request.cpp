// The HTTP request reader on bytes: requests split anywhere, pipelined requests in order, and
// every malformed or oversized request refused with its status before it is read whole.
#include <gtest/gtest.h>

#include <string>

#include "http_request.h"

namespace vkllm::http {
namespace {

using State = RequestReader::State;

std::string post(const std::string& path, const std::string& body) {
    return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
}

TEST(HttpRequest, ReadsOneRequestFedByteByByte) {
    const std::string bytes = post("/v1/completions?x=1", R"({"prompt": "hi"})");
    RequestReader reader;
    for (size_t i = 0; i + 1 < bytes.size(); ++i) {
        reader.feed(bytes.substr(i, 1));
        ASSERT_EQ(reader.next(), State::NeedMore) << "at byte " << i;
        EXPECT_TRUE(reader.mid_request());
    }
    reader.feed(bytes.substr(bytes.size() - 1));
    ASSERT_EQ(reader.next(), State::Ready);
    const Request r = reader.take();
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.target, "/v1/completions?x=1");
    EXPECT_EQ(r.path, "/v1/completions");
    EXPECT_EQ(r.body, R"({"prompt": "hi"})");
    EXPECT_EQ(r.header("content-TYPE"), "application/json");
    EXPECT_EQ(r.header("x-missing"), "");
    EXPECT_TRUE(r.keep_alive);
    EXPECT_EQ(r.version, 11);
    EXPECT_FALSE(reader.mid_request());
    EXPECT_EQ(reader.next(), State::NeedMore);
}

TEST(HttpRequest, PipelinedRequestsComeOutInOrder) {
    RequestReader reader;
    reader.feed(post("/a", "1") + post("/b", "22") + "GET /health HTTP/1.1\r\nHost: x\r\n\r\n" + post("/c", "333"));
    const char* paths[] = {"/a", "/b", "/health", "/c"};
    const char* bodies[] = {"1", "22", "", "333"};
    for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(reader.next(), State::Ready) << i;
        const Request r = reader.take();
        EXPECT_EQ(r.path, paths[i]);
        EXPECT_EQ(r.body, bodies[i]);
    }
    EXPECT_EQ(reader.next(), State::NeedMore);
    EXPECT_EQ(reader.buffered(), 0u);
}

TEST(HttpRequest, ChunkedBodyAndConnectionClose) {
    RequestReader reader;
    reader.feed("POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
    ASSERT_EQ(reader.next(), State::Ready);
    const Request r = reader.take();
    EXPECT_EQ(r.body, "hello world");
    EXPECT_FALSE(r.keep_alive);
}

TEST(HttpRequest, Http10IsNotKeptAliveByDefault) {
    RequestReader reader;
    reader.feed("GET /health HTTP/1.0\r\n\r\n");
    ASSERT_EQ(reader.next(), State::Ready);
    const Request r = reader.take();
    EXPECT_EQ(r.version, 10);
    EXPECT_FALSE(r.keep_alive);
}

TEST(HttpRequest, ExpectContinueIsOfferedOnceBeforeTheBody) {
    RequestReader reader;
    reader.feed("POST /x HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
    ASSERT_EQ(reader.next(), State::NeedMore);
    EXPECT_TRUE(reader.take_continue());
    EXPECT_FALSE(reader.take_continue());
    reader.feed("abc");
    ASSERT_EQ(reader.next(), State::Ready);
    EXPECT_EQ(reader.take().body, "abc");
}

// A refusal comes as soon as the bytes show it, not after the whole request.
State refusal_of(const std::string& bytes, int& status, Limits limits = {}) {
    RequestReader reader(limits);
    reader.feed(bytes);
    const State s = reader.next();
    status = s == State::Refused ? reader.refusal().status : 0;
    if (s == State::Refused) EXPECT_FALSE(reader.refusal().message.empty());
    return s;
}

TEST(HttpRequest, RefusesWithTheRightStatus) {
    int status = 0;
    EXPECT_EQ(refusal_of("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", status), State::Refused);
    EXPECT_EQ(status, 400);
    EXPECT_EQ(refusal_of("POST /x HTTP/1.1\r\nHost: x\r\n\r\n{}", status), State::Refused);
    EXPECT_EQ(status, 411);
    EXPECT_EQ(refusal_of("GARBAGE\r\n\r\n", status), State::Refused);
    EXPECT_EQ(status, 400);
    EXPECT_EQ(refusal_of("GET / HTTP/1.1\r\nno colon here\r\n\r\n", status), State::Refused);
    EXPECT_EQ(status, 400);
    EXPECT_EQ(refusal_of("GET / HTTP/2.0\r\n\r\n", status), State::Refused);
    EXPECT_EQ(status, 505);
    EXPECT_EQ(refusal_of("POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", status), State::Refused);
    EXPECT_EQ(status, 400);
}

TEST(HttpRequest, RefusesHugeHeadersBeforeReadingThemWhole) {
    Limits limits;
    limits.max_header_bytes = 4096;
    // 30 MB of header lines would be refused at the limit: the reader holds no more than the
    // limit and what one read adds.
    RequestReader reader(limits);
    reader.feed("GET / HTTP/1.1\r\n");
    State s = State::NeedMore;
    size_t fed = 0;
    while (s == State::NeedMore && fed < (30u << 20)) {
        const std::string line = "X-Filler-" + std::to_string(fed) + ": " + std::string(100, 'a') + "\r\n";
        reader.feed(line);
        fed += line.size();
        s = reader.next();
        ASSERT_LE(reader.buffered(), limits.max_header_bytes + line.size());
    }
    ASSERT_EQ(s, State::Refused);
    EXPECT_EQ(reader.refusal().status, 431);
    EXPECT_LT(fed, 2 * limits.max_header_bytes);
}

TEST(HttpRequest, RefusesTooManyHeaderFields) {
    std::string bytes = "GET / HTTP/1.1\r\n";
    for (int i = 0; i < 150; ++i) bytes += "a" + std::to_string(i) + ": b\r\n";
    bytes += "\r\n";
    int status = 0;
    EXPECT_EQ(refusal_of(bytes, status), State::Refused);
    EXPECT_EQ(status, 431);
}

TEST(HttpRequest, RefusesABodyPastTheLimitFromItsLength) {
    Limits limits;
    limits.max_body_bytes = 1000;
    int status = 0;
    EXPECT_EQ(refusal_of("POST /x HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", status, limits), State::Refused);
    EXPECT_EQ(status, 413);
    // A chunked body is counted as it comes.
    RequestReader reader(limits);
    reader.feed("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    State s = reader.next();
    for (int i = 0; i < 20 && s == State::NeedMore; ++i) {
        reader.feed("64\r\n" + std::string(100, 'z') + "\r\n");
        s = reader.next();
    }
    ASSERT_EQ(s, State::Refused);
    EXPECT_EQ(reader.refusal().status, 413);
}

TEST(HttpRequest, ARefusalIsFinal) {
    RequestReader reader;
    reader.feed("BAD\r\n\r\n");
    ASSERT_EQ(reader.next(), State::Refused);
    reader.feed("GET / HTTP/1.1\r\n\r\n");
    EXPECT_EQ(reader.next(), State::Refused);
    EXPECT_FALSE(reader.mid_request());
}

}  // namespace
}  // namespace vkllm::http
