import XCTest
import GLibSupport
import GStreamerSupport

/// GStreamerSupport's typed identity, which replaced raw pointers outside it:
/// elements compare by the GStreamer object they wrap, and a bus message
/// says whether it came from inside an element.
final class ElementIdentityTests: XCTestCase {
    func testElementsCompareByTheObjectTheyWrap() throws {
        let pipeline = try Pipeline.parse("videotestsrc name=src ! queue name=q ! fakesink name=sink")
        let first = try XCTUnwrap(pipeline.element(named: "src"))
        let again = try XCTUnwrap(pipeline.element(named: "src"))
        let sink = try XCTUnwrap(pipeline.element(named: "sink"))
        XCTAssertFalse(first === again, "a new wrapper each time")
        XCTAssertEqual(first, again)
        XCTAssertEqual(first.id, again.id)
        XCTAssertNotEqual(first, sink)
        XCTAssertEqual(Set([first, again, sink]).count, 2)
        XCTAssertTrue(pipeline.contains(first))
        XCTAssertTrue(first.contains(again))
        XCTAssertFalse(first.contains(pipeline))
        XCTAssertFalse(first.contains(sink))
    }

    func testABusMessageSaysWhichElementItCameFromInside() throws {
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("missing-\(UUID())/x.mp4")
        let pipeline = try Pipeline.parse("bin.( name=outer filesrc name=reader location=\(missing.path) ! fakesink name=sink )")
        let outer = try XCTUnwrap(pipeline.element(named: "outer"))
        let reader = try XCTUnwrap(pipeline.element(named: "reader"))
        let sink = try XCTUnwrap(pipeline.element(named: "sink"))
        let loop = MainLoop()
        var error: BusMessage?
        let watch = pipeline.watchBus { message in
            if case .error = message.kind, error == nil {
                error = message
                loop.quit()
            }
        }
        defer {
            pipeline.setState(.null)
            watch.remove()
        }
        pipeline.setState(.playing)
        _ = loop.run(forAtMost: 10)
        let message = try XCTUnwrap(error, "filesrc reports the missing file")
        XCTAssertEqual(message.sourceName, "reader")
        XCTAssertTrue(message.comes(fromInside: reader))
        XCTAssertTrue(message.comes(fromInside: outer), "the bin holding it")
        XCTAssertTrue(message.comes(fromInside: pipeline))
        XCTAssertFalse(message.comes(fromInside: sink))
    }
}
