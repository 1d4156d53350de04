import Foundation
import GStreamerSupport
import RecorderCore

/// A parsed pipeline whose named elements satisfy the recorder's contract.
public struct LoadedPipeline {
    public let template: PipelineTemplate
    public let pipeline: Pipeline
    /// `appsink name=blur_in`: raw frames leave the capture part here.
    public let captureSink: AppSink
    /// `appsrc name=blur_out`: processed frames come back here.
    public let processedSource: AppSource
    /// `splitmuxsink name=chunks`: writes the chunk files.
    public let chunkSink: Element
    /// `appsink name=audio_in`, when the pipeline has an audio path: raw
    /// audio, converted by the loader to `AudioTrack.caps`, for the chunks' audio companions.
    public let audioSink: AppSink?
    /// Sinks besides blur_in and chunks (a stream to the network, a
    /// preview). They must not wait for a first frame before the
    /// pipeline plays (see `RecordingSession.start`).
    public let extraSinks: [Element]
}

/// Turns a pipeline file into a checked GStreamer pipeline, with errors
/// that name the file, the line and what to fix.
public enum PipelineLoader {
    /// - Parameter privacyBoundary: refuse any path from the capture part
    ///   into a sink that bypasses blur_in → blur_out (on whenever
    ///   `privacy.face_blur` is: the privacy stage must see every frame).
    public static func load(file: String, variables: [String: String], privacyBoundary: Bool) throws -> LoadedPipeline {
        let template = try PipelineTemplate(file: file, variables: variables)
        return try load(template: template, privacyBoundary: privacyBoundary)
    }

    /// Every error's text has the pipeline's credentials hidden (`PipelineTemplate.redacted`).
    public static func load(template: PipelineTemplate, privacyBoundary: Bool) throws -> LoadedPipeline {
        do {
            return try loadAndCheck(template: template, privacyBoundary: privacyBoundary)
        } catch var error as PipelineError {
            error.reason = template.redacted(error.reason)
            throw error
        }
    }

    private static func loadAndCheck(template: PipelineTemplate, privacyBoundary: Bool) throws -> LoadedPipeline {
        let pipeline: Pipeline
        do {
            pipeline = try Pipeline.parse(template.description)
        } catch let failure as ParseFailure {
            throw explain(failure, in: template)
        }
        let graph = pipeline.graph()
        let loaded = try checkContract(pipeline, graph: graph, template: template)
        if privacyBoundary {
            try checkPrivacyBoundary(graph, template: template)
            try checkStreamTap(graph, template: template)
        }
        return loaded
    }

    /// Maps a gst_parse error back to a line of the file.
    static func explain(_ failure: ParseFailure, in template: PipelineTemplate) -> PipelineError {
        // The missing-elements list is only meaningful for "no element" errors
        // (gst_parse fills it for other failures too).
        if failure.message.hasPrefix("no element"),
           let missing = failure.missingElements.first ?? quotedWords(in: failure.message).first {
            return PipelineError(file: template.file, line: template.line(mentioning: missing),
                                 reason: "no element '\(missing)': \(ElementPackages.advice(for: missing))")
        }
        let message = failure.message
        // gst_parse messages quote the culprit: no element "x", no property "p" in element "e",
        // could not link a to b, could not set property "p" in element "e" to "v".
        let quoted = quotedWords(in: message)
        if message.hasPrefix("no property"), let property = quoted.first {
            return PipelineError(file: template.file, line: template.line(mentioning: property),
                                 reason: "\(message) (gst-inspect-1.0 lists the properties of each element)")
        }
        if message.hasPrefix("could not set property"), let property = quoted.first {
            return PipelineError(file: template.file, line: template.line(mentioning: property),
                                 reason: "\(message): the value does not fit the property's type or range")
        }
        if message.hasPrefix("could not link") {
            let words = message.split(separator: " ").map(String.init)
            // "could not link <a> to <b>"; names are element names like x264enc0 or user names.
            let target = words.count >= 6 ? words[5].trimmingCharacters(in: .punctuationCharacters) : ""
            let line = template.line(mentioning: target) ?? template.line(mentioning: stripInstanceNumber(target))
            return PipelineError(file: template.file, line: line,
                                 reason: "\(message): the two elements share no format; add a converter (videoconvert, capsfilter) or fix the caps")
        }
        for word in quoted {
            if let line = template.line(mentioning: word) {
                return PipelineError(file: template.file, line: line, reason: message)
            }
        }
        return PipelineError(file: template.file, line: nil, reason: "GStreamer cannot parse the pipeline: \(message)")
    }

    static func quotedWords(in message: String) -> [String] {
        message.split(separator: "\"", omittingEmptySubsequences: false).enumerated()
            .filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    /// `x264enc0` → `x264enc`: gst_parse names unnamed elements after their factory.
    static func stripInstanceNumber(_ name: String) -> String {
        String(name.reversed().drop(while: { $0.isNumber }).reversed())
    }

    static func checkContract(_ pipeline: Pipeline, graph: PipelineGraph, template: PipelineTemplate) throws -> LoadedPipeline {
        typealias C = PipelineTemplate.Contract
        func require(_ name: String, factory: String, role: String) throws -> Element {
            guard let element = pipeline.element(named: name) else {
                throw PipelineError(file: template.file, line: nil,
                                    reason: "no element named '\(name)': the pipeline must contain '\(factory) name=\(name)' (\(role))")
            }
            guard element.factoryName == factory else {
                throw PipelineError(file: template.file, line: template.line(mentioning: name),
                                    reason: "'\(name)' is a \(element.factoryName ?? "?"), but it must be a \(factory) (\(role))")
            }
            return element
        }
        let sink = try require(C.captureSink, factory: "appsink", role: "where raw frames leave the capture part")
        let source = try require(C.processedSource, factory: "appsrc", role: "where frames come back after the privacy stage")
        let chunks = try require(C.chunkSink, factory: "splitmuxsink", role: "which writes the chunks")
        guard let captureSink = AppSink(sink), let processedSource = AppSource(source) else {
            throw PipelineError(file: template.file, line: nil, reason: "blur_in/blur_out have the wrong element types")
        }
        guard chunks.staticPad("video") != nil else {
            throw PipelineError(file: template.file, line: template.line(mentioning: C.chunkSink),
                                reason: "no video stream is linked into '\(C.chunkSink)': end the encoding part with '… ! h264parse ! splitmuxsink name=\(C.chunkSink)'")
        }
        let audioSink = try audioPath(pipeline, template: template)
        // Sinks inside another element (splitmuxsink's file sink) are that element's business.
        let extraSinks = graph.nodes.filter { node in
            node.isSink && ![C.captureSink, C.chunkSink, C.audioSink].contains(node.name)
                && !chunks.contains(node.element)
        }.map(\.element)
        return LoadedPipeline(template: template, pipeline: pipeline, captureSink: captureSink,
                              processedSource: processedSource, chunkSink: chunks, audioSink: audioSink,
                              extraSinks: extraSinks)
    }

    /// The optional audio path: `… ! appsink name=audio_in`, fed raw audio
    /// by a static link. The service owns the format: the loader puts
    /// audioconvert ! audioresample ! capsfilter(`AudioTrack.caps`) before
    /// the sink, so any raw audio source will do.
    static func audioPath(_ pipeline: Pipeline, template: PipelineTemplate) throws -> AppSink? {
        let name = PipelineTemplate.Contract.audioSink
        guard let element = pipeline.element(named: name) else { return nil }
        let line = template.line(mentioning: name)
        guard element.factoryName == "appsink", let sink = AppSink(element) else {
            throw PipelineError(file: template.file, line: line,
                                reason: "'\(name)' is a \(element.factoryName ?? "?"), but it must be an appsink (where raw audio leaves the pipeline)")
        }
        guard let pad = element.staticPad("sink"), let feed = pad.peer else {
            throw PipelineError(file: template.file, line: line,
                                reason: "nothing is linked into '\(name)': end the audio part with '… ! audioconvert ! appsink name=\(name)'")
        }
        let types = feed.possibleMediaTypes
        guard types.contains("audio/x-raw") else {
            throw PipelineError(file: template.file, line: line,
                                reason: "'\(name)' must receive raw audio (audio/x-raw), but gets \(types.isEmpty ? "nothing usable" : types.joined(separator: ", ")): decode or convert before it ('… ! audioconvert ! appsink name=\(name)')")
        }
        feed.unlink(from: pad)
        do {
            let chain = try ["audioconvert", "audioresample", "capsfilter"].map { try Element.make($0) }
            chain[2].set("caps", AudioTrack.caps)
            var previous = feed
            for element in chain {
                guard pipeline.add(element), let input = element.staticPad("sink"), previous.link(to: input),
                      let output = element.staticPad("src") else {
                    throw GStreamerError("cannot link \(element.factoryName ?? "?")")
                }
                previous = output
            }
            guard previous.link(to: pad) else { throw GStreamerError("cannot link the converted audio into \(name)") }
        } catch {
            throw PipelineError(file: template.file, line: line, reason: "cannot convert the audio for '\(name)': \(error)")
        }
        return sink
    }

    /// The element whose output enters `chunks`: where the RTSP stream
    /// (`stream.rtsp_listen`) takes the recorded H.264 (`StreamTap`).
    static func streamTapIndex(_ graph: PipelineGraph) -> Int? {
        guard let chunks = graph.index(named: PipelineTemplate.Contract.chunkSink) else { return nil }
        // The video input's feeder; any other feeder of chunks is checked by checkPrivacyBoundary.
        guard let video = graph.nodes[chunks].element.staticPad("video")?.peer else {
            return graph.links.first { $0.value.contains(chunks) }?.key
        }
        return graph.nodes.firstIndex { node in node.element.staticPad("src").map { $0 == video } ?? false }
            ?? graph.links.first { $0.value.contains(chunks) }?.key
    }

    /// The RTSP stream's side of the privacy boundary: the stream is taken
    /// where the recording enters `chunks` (never from the capture side), so
    /// that element must get frames from `blur_out` and from no other source.
    /// `checkPrivacyBoundary` implies it for every sink; this says it for the
    /// stream's tap by name, so a pipeline that breaks it is refused with the
    /// stream in the reason, and a change to either check cannot open the stream.
    static func checkStreamTap(_ graph: PipelineGraph, template: PipelineTemplate) throws {
        typealias C = PipelineTemplate.Contract
        guard let tap = streamTapIndex(graph) else {
            throw PipelineError(file: template.file, line: template.line(mentioning: C.chunkSink),
                                reason: "nothing is linked into '\(C.chunkSink)': the recording (and the RTSP stream) would get no frames")
        }
        let blurOut = graph.index(named: C.processedSource)
        let links = graph.possibleLinks
        let tapName = graph.nodes[tap].name
        func reaches(from source: Int, stoppingAt stop: Int?) -> Bool {
            var seen: Set<Int> = [source]
            var queue = [source]
            while let node = queue.popLast() {
                if node == tap { return true }
                for next in links[node] ?? [] where next != stop && seen.insert(next).inserted { queue.append(next) }
            }
            return false
        }
        if let blurOut, !reaches(from: blurOut, stoppingAt: nil) {
            throw PipelineError(file: template.file, line: template.line(mentioning: tapName) ?? template.line(mentioning: stripInstanceNumber(tapName)),
                                reason: "privacy: '\(tapName)' feeds '\(C.chunkSink)' (where the RTSP stream is taken) but gets nothing from '\(C.processedSource)'")
        }
        for source in graph.nodes.indices where graph.nodes[source].isSource && source != blurOut {
            guard reaches(from: source, stoppingAt: blurOut) else { continue }
            throw PipelineError(file: template.file, line: template.line(mentioning: tapName) ?? template.line(mentioning: stripInstanceNumber(tapName)), reason: """
                privacy: '\(tapName)' feeds '\(C.chunkSink)', where the RTSP stream is taken, and gets frames from \
                '\(graph.nodes[source].name)' that do not pass through \(C.captureSink) and \(C.processedSource); \
                with privacy.face_blur = true the stream carries only what passed the privacy stage
                """)
        }
    }

    /// The privacy boundary, checked on the graph rather than on names:
    /// frames from any source other than blur_out may reach no sink but
    /// blur_in. A tee before blur_in whose branch also feeds `chunks` (or a
    /// network sink) would record or send faces the privacy stage never saw.
    static func checkPrivacyBoundary(_ graph: PipelineGraph, template: PipelineTemplate) throws {
        typealias C = PipelineTemplate.Contract
        let links = graph.possibleLinks
        let blurIn = graph.index(named: C.captureSink)
        let blurOut = graph.index(named: C.processedSource)
        // Elements from which blur_in can be reached: the capture part proper.
        var feedsBlurIn = Set<Int>()
        if let blurIn {
            var upstream: [Int: [Int]] = [:]
            for (from, tos) in links { for to in tos { upstream[to, default: []].append(from) } }
            var queue = [blurIn]
            while let node = queue.popLast() {
                if feedsBlurIn.insert(node).inserted { queue += upstream[node] ?? [] }
            }
        }
        // Audio carries no faces: audio_in takes only raw audio (checked in `audioPath`).
        let audioIn = graph.index(named: C.audioSink)
        for source in graph.nodes.indices where graph.nodes[source].isSource && source != blurOut {
            // Breadth first, remembering the way, so the report shows the shortest leak.
            var cameFrom: [Int: Int] = [source: source]
            var queue = [source]
            while !queue.isEmpty {
                let node = queue.removeFirst()
                if node != source, node != blurIn, node != audioIn, graph.nodes[node].isSink {
                    var path = [node]
                    while let previous = cameFrom[path[0]], previous != path[0] { path.insert(previous, at: 0) }
                    // Where the leak leaves the capture part: the last element on the way that also feeds blur_in.
                    let fork = path.last { feedsBlurIn.contains($0) } ?? source
                    let forkName = graph.nodes[fork].name
                    let line = template.line(mentioning: forkName)
                        ?? template.line(mentioning: stripInstanceNumber(forkName))
                        ?? template.line(mentioning: graph.nodes[node].name)
                    let route = path.map { graph.nodes[$0].name }.joined(separator: " → ")
                    throw PipelineError(file: template.file, line: line, reason: """
                        privacy: '\(graph.nodes[node].name)' gets frames from '\(graph.nodes[source].name)' \
                        that do not pass through \(C.captureSink) and \(C.processedSource) (\(route)); \
                        with privacy.face_blur = true every frame must go through the privacy stage: \
                        remove the branch at '\(forkName)', or take it after \(C.processedSource)
                        """)
                }
                for next in links[node] ?? [] where cameFrom[next] == nil && next != blurOut {
                    cameFrom[next] = node
                    queue.append(next)
                }
            }
        }
    }
}
