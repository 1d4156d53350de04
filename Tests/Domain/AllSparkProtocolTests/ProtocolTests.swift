import XCTest
@testable import AllSparkProtocol

final class ServerAddressTests: XCTestCase {
    func testForms() throws {
        let plain = try ServerAddress(parsing: "allspark.local:8080")
        XCTAssertEqual(plain, ServerAddress(host: "allspark.local", port: 8080))
        XCTAssertEqual(plain.candidates, [.wss, .ws], "no scheme: wss first, then ws")
        XCTAssertEqual(plain.url(.wss), "wss://allspark.local:8080/")

        let https = try ServerAddress(parsing: "https://10.0.0.2:8443/ws")
        XCTAssertEqual(https.candidates, [.wss])
        XCTAssertEqual(https.url(.wss), "wss://10.0.0.2:8443/ws")
        XCTAssertEqual(https.httpURL(.wss, path: "/api/health"), "https://10.0.0.2:8443/api/health")

        XCTAssertEqual(try ServerAddress(parsing: "ws://h:1").candidates, [.ws])
        XCTAssertEqual(try ServerAddress(parsing: "http://h").port, 80)
        XCTAssertEqual(try ServerAddress(parsing: "WSS://h").port, 443)

        let v6 = try ServerAddress(parsing: "[fe80::1%eth0]:8080")
        XCTAssertEqual(v6.host, "fe80::1%eth0")
        XCTAssertEqual(v6.url(.ws), "ws://[fe80::1%25eth0]:8080/", "a URL writes the zone separator as %25 (RFC 6874); GLib refuses a bare %")
        XCTAssertEqual(v6.httpURL(.ws, path: "/api/health"), "http://[fe80::1%25eth0]:8080/api/health")
        XCTAssertEqual(v6.description, "[fe80::1%eth0]:8080/", "logs show the zone as ping takes it")
        XCTAssertEqual(try ServerAddress(parsing: "ws://[fe80::1%25eth0]:8080").host, "fe80::1%eth0", "a URL's %25 is decoded")
        XCTAssertEqual(try ServerAddress(parsing: "[fe80::1%25]:8080").host, "fe80::1%25", "without a scheme the zone is taken as written (interface index 25)")
        XCTAssertEqual(try ServerAddress(parsing: "wss://[::1]:9000/x").url(.wss), "wss://[::1]:9000/x")
    }

    func testErrorsSayWhatWasExpected() {
        let cases: [(String, String)] = [
            ("", "empty"),
            ("host", "give the port"),
            ("host:0", "not a port"),
            ("host:http", "not a port"),
            ("ftp://host:21", "unknown scheme"),
            ("::1:8080", "in brackets"),
            ("[::1:8080", "closing ']'"),
            (":8080", "no host"),
            ("[fe80::1%]:8080", "interface of a link-local address"),
        ]
        for (text, fragment) in cases {
            XCTAssertThrowsError(try ServerAddress(parsing: text), text) { error in
                XCTAssertTrue("\(error)".contains(fragment), "\(text): \(error)")
            }
        }
    }
}

final class MessageTests: XCTestCase {
    func parse(_ text: String) -> ServerMessage? { try? ServerMessage.parse(text).get() }

    /// Types are the protocol's to check; ranges are the box's (RecorderCore's `SettingsRules`, the same for every source).
    func testClientConfigAcceptsValidFieldsIgnoresUnknownAndRejectsBadOnes() throws {
        guard case .clientConfig(let update)? = parse("""
            {"type":"clientConfig","config":{"videoFormat":"mov","videoChunkDurationMs":10000,"videoBufferMaxMB":2.5,"communicationsPolicy":"x"}}
            """) else { return XCTFail("not a clientConfig") }
        XCTAssertEqual(update.videoFormat, .mov)
        XCTAssertEqual(update.chunkDurationMs, 10000)
        XCTAssertNil(update.bufferMaxMB)
        XCTAssertNotNil(update.rejected["videoBufferMaxMB"], "not a whole number")
        guard case .clientConfig(let negative)? = parse(#"{"type":"clientConfig","config":{"videoBufferMaxMB":-3}}"#) else { return XCTFail() }
        XCTAssertEqual(negative.bufferMaxMB, -3, "a whole number: the box's rules refuse it, with every source's words")
        XCTAssertEqual(update.ignoredKeys, [], "communicationsPolicy is the link's policy's to read, not an ignored key")

        guard case .clientConfig(let bad)? = parse(#"{"type":"clientConfig","config":{"videoFormat":"avi","videoChunkDurationMs":true,"videoBufferMaxMB":"big"}}"#)
        else { return XCTFail() }
        XCTAssertEqual(Set(bad.rejected.keys), ["videoFormat", "videoChunkDurationMs", "videoBufferMaxMB"])
        guard case .clientConfig(let huge)? = parse(#"{"type":"clientConfig","config":{"videoChunkDurationMs":1e300,"videoBufferMaxMB":-1e300}}"#)
        else { return XCTFail() }
        XCTAssertEqual(Set(huge.rejected.keys), ["videoChunkDurationMs", "videoBufferMaxMB"], "huge numbers are rejected, not trapped on")
        XCTAssertEqual(bad.videoFormat, nil)
        XCTAssertEqual(bad.chunkDurationMs, nil)
        XCTAssertEqual(bad.bufferMaxMB, nil, "nothing bad is kept")
    }

    /// Every key a server since 0.5 ships (DESIGN.md), as a Linux box takes it.
    func testEveryShippedClientConfigKeyIsAccepted() throws {
        guard case .clientConfig(let update)? = parse("""
            {"type":"clientConfig","config":{"videoFormat":"none","videoChunkDurationMs":10000,"videoBufferMaxMB":16000,"fps":30.0,
             "audioFormat":"m4a","timestampFormat":"txt","poseFormat":"json","depthFormat":"none",
             "communicationsPolicy":{"wifi":true,"cellular":true,"ethernet":true,"usb":true,"bluetooth":false},"futureKey":1}}
            """) else { return XCTFail("not a clientConfig") }
        XCTAssertEqual(update.recordsVideo, false)
        XCTAssertNil(update.videoFormat, "\"none\" keeps the container")
        XCTAssertEqual(update.framerate, 30)
        XCTAssertEqual(update.audioFormat, .m4a)
        XCTAssertEqual(update.timestampFormat, .txt)
        XCTAssertEqual(update.notApplicable, ["poseFormat": "json"], "depthFormat \"none\" asks for nothing")
        XCTAssertEqual(update.rejected, [:])
        XCTAssertEqual(update.ignoredKeys, ["futureKey"])
        XCTAssertTrue(update.changesTuning)

        guard case .clientConfig(let video)? = parse(#"{"type":"clientConfig","config":{"videoFormat":"MP4","audioFormat":"none","timestampFormat":"none"}}"#)
        else { return XCTFail() }
        XCTAssertEqual(video.videoFormat, .mp4)
        XCTAssertEqual(video.recordsVideo, true)
        XCTAssertEqual(video.audioFormat, ClientConfigUpdate.AudioFormat.none)
        XCTAssertEqual(video.timestampFormat, ClientConfigUpdate.TimestampFormat.none)

        guard case .clientConfig(let bad)? = parse("""
            {"type":"clientConfig","config":{"fps":"30","audioFormat":"mp3","timestampFormat":true,"poseFormat":"xml","depthFormat":5}}
            """) else { return XCTFail() }
        XCTAssertEqual(Set(bad.rejected.keys), ["fps", "audioFormat", "timestampFormat", "poseFormat", "depthFormat"])
        XCTAssertFalse(bad.changesTuning, "nothing bad is kept")
        XCTAssertEqual(bad.notApplicable, [:])
        guard case .clientConfig(let boolean)? = parse(#"{"type":"clientConfig","config":{"fps":true}}"#) else { return XCTFail() }
        XCTAssertNil(boolean.framerate, "a boolean is not a frame rate")
    }

    func testCommands() {
        XCTAssertEqual(parse(#"{"command":"uploadTimeRange","startTime":1700000000.5,"endTime":1700000300,"message":"last 5 min"}"#),
                       .uploadTimeRange(start: 1_700_000_000.5, end: 1_700_000_300, message: "last 5 min"))
        // The obsolete record command's duration is in milliseconds (the iOS app 0.2 sent ms).
        XCTAssertEqual(parse(#"{"command":"record","message":"go","duration":30000,"autoUpload":true}"#),
                       .record(message: "go", duration: 30, autoUpload: true))
        XCTAssertEqual(parse(#"{"command":"record","duration":1500}"#), .record(message: nil, duration: 1.5, autoUpload: false))
        XCTAssertEqual(parse(#"{"command":"record"}"#), .record(message: nil, duration: nil, autoUpload: false))
        XCTAssertEqual(parse(#"{"command":"reboot"}"#), .otherCommand(name: "reboot"))
        XCTAssertEqual(parse(#"{"status":"success","message":"Video uploaded successfully"}"#),
                       .status(success: true, message: "Video uploaded successfully"))
        XCTAssertEqual(parse(#"{"status":"error","message":"Unknown message type"}"#),
                       .status(success: false, message: "Unknown message type"))
    }

    func testHostileAndMalformedMessagesAreRejectedWithAReason() {
        let bad = [
            "not json", "[1,2]", "{}", #"{"type":"hello"}"#, #"{"type":"clientConfig"}"#,
            #"{"command":"uploadTimeRange","startTime":"a","endTime":2}"#,
            #"{"command":"uploadTimeRange","startTime":5,"endTime":5}"#,
            #"{"command":"uploadTimeRange","startTime":9,"endTime":2}"#,
            #"{"command":"uploadTimeRange","startTime":true,"endTime":2}"#,
            #"{"command":"uploadTimeRange","startTime":1e400,"endTime":2}"#,
            String(repeating: " ", count: ServerMessage.maximumTextBytes + 1),
        ]
        for text in bad {
            switch ServerMessage.parse(text) {
            case .success(let m): XCTFail("\(text.prefix(60)) parsed as \(m)")
            case .failure(let rejection): XCTAssertFalse(rejection.description.isEmpty)
            }
        }
    }

    func testOutgoingMessagesAreWhatServersKeyOn() throws {
        XCTAssertEqual(ClientMessage.text(ClientMessage.ClientInfo(clientName: "Door (x86)")),
                       #"{"clientName":"Door (x86)","type":"clientInfo"}"#)
        XCTAssertEqual(ClientMessage.text(ClientMessage.UploadMetadata(filename: "chunk_1700000000000.mov", filesize: 1234,
                                                                       mimetype: "video/quicktime")),
                       #"{"filename":"chunk_1700000000000.mov","filesize":1234,"mimetype":"video/quicktime","type":"upload"}"#)
        let saved = ClientMessage.text(ClientMessage.ChunkSaved(startTime: 1_700_000_000, endTime: 1_700_000_030, camera: "test",
                                                                size: 1234, format: "mov", fps: 30, width: 1280, height: 720))
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(saved.utf8)) as? [String: Any])
        XCTAssertEqual(json["type"] as? String, "chunkSaved")
        XCTAssertEqual(json["startTime"] as? Double, 1_700_000_000)
        XCTAssertEqual((json["dimensions"] as? [String: Int])?["width"], 1280)
        XCTAssertEqual(json["format"] as? String, "mov")
    }
}

final class JSONNumberTests: XCTestCase {
    /// On Linux `0 is Bool` and `1 is Bool` hold for JSON numbers: they must still count as numbers.
    func testZeroAndOneAreNumbersAndBooleansAreNot() {
        guard case .uploadTimeRange(let start, let end, _)? = try? ServerMessage.parse(#"{"command":"uploadTimeRange","startTime":0,"endTime":1}"#).get() else {
            return XCTFail("0 and 1 are valid times")
        }
        XCTAssertEqual(start, 0)
        XCTAssertEqual(end, 1)
        guard case .clientConfig(let update)? = try? ServerMessage.parse(#"{"type":"clientConfig","config":{"videoBufferMaxMB":1}}"#).get() else {
            return XCTFail("not a clientConfig")
        }
        XCTAssertEqual(update.bufferMaxMB, 1)
        XCTAssertThrowsError(try ServerMessage.parse(#"{"command":"uploadTimeRange","startTime":false,"endTime":true}"#).get())
    }
}

final class ReplyLedgerTests: XCTestCase {
    func testRepliesAreAttributedInOrderAndAnUploadSettlesAtItsBarrier() {
        var ledger = ReplyLedger<String>()
        ledger.sent(.chunkSaved("c"))
        ledger.sent(.upload("a.mp4"))
        // An old server: chunkSaved earns an error that must not fail the upload.
        XCTAssertEqual(ledger.received(success: false, message: "Unknown message type"), .chunkSaved(success: false))
        // The upload's success is only noted: something more may still belong to it.
        XCTAssertEqual(ledger.received(success: true, message: "Video uploaded successfully"), .noted("a.mp4"))
        XCTAssertTrue(ledger.isWaitingForUpload)
        XCTAssertEqual(ledger.barrier(after: "a.mp4"), .upload("a.mp4", success: true, message: "Video uploaded successfully"))
        XCTAssertFalse(ledger.isWaitingForUpload)
        ledger.sent(.chunkSaved("c"))
        XCTAssertEqual(ledger.received(success: true, message: "Chunk saved info received"), .chunkSaved(success: true))
    }

    func testAReplyWhenNoneIsOwedMakesTheLedgerUntrusted() {
        var ledger = ReplyLedger<String>()
        guard case .untrusted = ledger.received(success: true, message: nil) else { return XCTFail("a stray reply was accepted") }
    }

    func testAnExtraSuccessAfterTheMetadataIsCaughtNotTakenForTheUpload() {
        // The issue's server: a success after each upload metadata, an error (the real answer) after each binary.
        var ledger = ReplyLedger<String>()
        ledger.sent(.upload("a.mp4"))
        XCTAssertEqual(ledger.received(success: true, message: nil), .noted("a.mp4"))
        guard case .untrusted = ledger.received(success: false, message: "Failed to write video data") else {
            return XCTFail("[success, error] fits no upload")
        }
        // Two successes do not fit either.
        ledger = ReplyLedger<String>()
        ledger.sent(.upload("b.mp4"))
        _ = ledger.received(success: true, message: nil)
        guard case .untrusted = ledger.received(success: true, message: nil) else { return XCTFail("[success, success] fits no upload") }
    }

    func testARefusedMetadataOwesASecondErrorAndSettlesOnIt() {
        var ledger = ReplyLedger<String>()
        ledger.sent(.upload("a.mp4"))
        XCTAssertEqual(ledger.received(success: false, message: "Failed to write file"), .noted("a.mp4"))
        XCTAssertEqual(ledger.received(success: false, message: "Metadata not received yet"),
                       .upload("a.mp4", success: false, message: "Failed to write file"))
        XCTAssertEqual(ledger.barrier(after: "a.mp4"), .nothing, "the barrier of a settled upload changes nothing")
        ledger.sent(.chunkSaved("c"))
        XCTAssertEqual(ledger.received(success: false, message: "Unknown message type"), .chunkSaved(success: false))
    }

    func testAFailedBinarySettlesAtTheBarrierAndALateMetadataErrorIsItsTail() {
        var ledger = ReplyLedger<String>()
        ledger.sent(.upload("a.mp4"))
        XCTAssertEqual(ledger.received(success: false, message: "Failed to write video data"), .noted("a.mp4"))
        XCTAssertEqual(ledger.barrier(after: "a.mp4"), .upload("a.mp4", success: false, message: "Failed to write video data"))
        // A server whose pong overtook the second error of a refused metadata.
        XCTAssertEqual(ledger.received(success: false, message: "Metadata not received yet"), .tailOfFailedUpload("a.mp4"))
    }

    func testUnansweredAnnouncementsAreKnownOldestFirst() {
        var ledger = ReplyLedger<String>()
        ledger.sent(.chunkSaved("one"))
        ledger.sent(.chunkSaved("two"))
        ledger.sent(.upload("a.mp4"))
        ledger.sent(.chunkSaved("three"))
        XCTAssertEqual(ledger.received(success: true, message: "Chunk saved info received"), .chunkSaved(success: true))
        XCTAssertEqual(ledger.unansweredAnnouncements, ["two", "three"], "the answered one is gone; the rest in sending order")
    }

    func testABarrierBeforeTheReplyWaitsForIt() {
        // Servers whose pongs overtake their replies: the reply that follows settles the upload.
        var ledger = ReplyLedger<String>()
        ledger.sent(.upload("a.mp4"))
        XCTAssertEqual(ledger.barrier(after: "a.mp4"), .nothing)
        XCTAssertEqual(ledger.received(success: true, message: "Video uploaded successfully"),
                       .upload("a.mp4", success: true, message: "Video uploaded successfully"))
    }
}
