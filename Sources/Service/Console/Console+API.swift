import Foundation
import AllSparkProtocol
import Recorder
import RecorderCore
import ServerLink
import SoupSupport

// The REST API's answers (`/api/v1/…`) and the Prometheus metrics.
extension Console {
    /// - Parameter requestHost: the host a request came to (its Host header), for the stream's address.
    func status(requestHost: String? = nil) -> StatusAnswer {
        let config = service.configuration
        let recorder = service.recorder
        let tuning = recorder?.currentTuning ?? config.tuning
        let stats = recorder?.frameStatistics
        let chunks = recorder?.catalog.all ?? []
        return StatusAnswer(
            version: ProductVersion.current, device: config.device.name, time: Date(),
            clock: .init(synchronized: recorder?.wallClock.isSynchronized(), steps: recorder?.wallClock.steps ?? 0,
                         lastStepSeconds: recorder?.wallClock.latestStep?.seconds),
            recording: .init(state: recorder.map { "\($0.state)" } ?? "stopped",
                             framesCaptured: stats?.captured ?? 0, framesRecorded: stats?.recorded ?? 0,
                             chunksRecorded: recorder?.chunksRecorded ?? 0, lastProblem: recorder?.lastProblem,
                             videoFormat: tuning.videoFormat.rawValue, chunkDurationMs: tuning.chunkDurationMs,
                             pipeline: (config.recording.pipeline as NSString).lastPathComponent,
                             width: (stats?.width ?? 0) > 0 ? stats?.width : nil,
                             height: (stats?.height ?? 0) > 0 ? stats?.height : nil,
                             framesPerSecond: (stats?.framesPerSecond ?? 0) > 0 ? stats?.framesPerSecond : nil,
                             privacy: config.privacy.faceBlur ? "faces pixelated (\(config.privacy.mode))" : "off: faces are recorded unblurred"),
            health: healthAnswer(),
            storage: .init(path: config.recording.storageDirectory, chunks: chunks.count,
                           bytes: recorder?.catalog.totalBytes ?? 0, bufferMaxBytes: tuning.bufferMaxBytes,
                           diskFreeBytes: StorageGuard.freeBytes(at: URL(fileURLWithPath: config.recording.storageDirectory)), oldest: chunks.first.map { Date(timeIntervalSince1970: $0.start) },
                           newest: chunks.last.map { Date(timeIntervalSince1970: $0.end) }),
            server: linkState(), stream: streamAnswer(requestHost: requestHost))
    }

    /// The RTSP stream's address and clients, when `stream.rtsp_listen` is set.
    func streamAnswer(requestHost: String?) -> StatusAnswer.Stream? {
        guard service.configuration.stream.isEnabled else { return nil }
        guard let stream = service.stream else {
            return .init(state: "not_listening", url: nil, user: ConsolePassword.streamUser, clients: [], clientsRefused: 0,
                         frames: 0, bytes: 0, framesDropped: 0, clientsClosedStalled: 0)
        }
        // The Host header without its port (an IPv6 literal keeps its brackets off: url(forHost:) adds them).
        var host = requestHost
        if let h = host {
            if h.hasPrefix("["), let end = h.firstIndex(of: "]") { host = String(h[h.index(after: h.startIndex)..<end]) }
            else if let colon = h.lastIndex(of: ":") { host = String(h[..<colon]) }
        }
        let statistics = stream.statistics
        return .init(state: "listening", url: stream.url(forHost: host), user: ConsolePassword.streamUser,
                     clients: stream.clients.map { .init(address: $0.address, connected: $0.connectedAt) },
                     clientsRefused: statistics.refused, frames: statistics.frames, bytes: statistics.bytes,
                     framesDropped: statistics.dropped, clientsClosedStalled: statistics.stalled)
    }

    /// The recorder's health with the status /healthz gives: ok, degraded
    /// (recording, but the privacy stage is behind or frames are lost) or not_recording.
    func healthAnswer() -> StatusAnswer.Health {
        guard let recorder = service.recorder else { return .init(status: "not_recording", problems: ["the recorder is stopped"]) }
        let health = recorder.health
        let status = recorder.state != .recording ? "not_recording" : health.problems.isEmpty ? "ok" : "degraded"
        // Rounded for people and dashboards: the raw ratios carry noise, not information.
        func round(_ value: Double?, _ places: Double) -> Double? { value.map { ($0 * places).rounded() / places } }
        return .init(status: status, problems: health.problems,
                     recordedFramesPerSecond: round(health.recordedFramesPerSecond, 10),
                     sourceFramesPerSecond: health.sourceFramesPerSecond, cpuPercent: round(health.cpuPercent, 10),
                     temperatureCelsius: round(health.temperatureCelsius, 10),
                     privacy: health.privacy.map { .init(behind: $0.behind, heldFrames: $0.heldFrames, lateLastMinute: $0.lateLastMinute,
                                                          droppedLastMinute: $0.droppedLastMinute, blackedOutLastMinute: $0.blackedOutLastMinute,
                                                          hiddenShareLastMinute: (($0.hiddenShareLastMinute * 1000).rounded()) / 1000) })
    }

    /// The server link as the API names it: "none" (no link) or its state, the scheme while connected, the address.
    func linkState() -> StatusAnswer.Server {
        let link = service.link
        var scheme: String?
        if case .connected(let s)? = link?.state { scheme = s.rawValue }
        return .init(state: link.map { Self.stateName($0.state) } ?? "none", scheme: scheme, address: link?.address?.description)
    }

    static func stateName(_ state: ServerLink.State) -> String {
        switch state {
        case .disconnected: return "disconnected"
        case .connecting: return "connecting"
        case .connected: return "connected"
        }
    }

    func chunks(_ request: HTTPRequest) -> HTTPResponse {
        var from = -Double.infinity, to = Double.infinity
        for (name, value) in [("from", request.query["from"]), ("to", request.query["to"])] {
            guard let value else { continue }
            guard let time = QueryTime.parse(value) else {
                return error(422, "invalid_time", "\(name) must be \(QueryTime.expected)", field: name)
            }
            if name == "from" { from = time } else { to = time }
        }
        guard let catalog = service.recorder?.catalog else { return json(200, ChunksAnswer(chunks: [])) }
        return json(200, ChunksAnswer(chunks: catalog.chunks(from: from, to: to).map { Self.answer($0, in: catalog) }))
    }

    static func answer(_ record: ChunkRecord, in catalog: ChunkCatalog) -> ChunkAnswer {
        let companions = catalog.companions(of: record).map { companion -> CompanionAnswer in
            var size: Int64 = 0
            if case .file(let bytes) = catalog.folder.entry(companion.file) { size = bytes }
            return CompanionAnswer(name: companion.file, kind: companion.kind.rawValue, sizeBytes: size, mimeType: companion.mimeType,
                                   url: "/api/v1/chunks/\(companion.file)")
        }
        return ChunkAnswer(name: record.file, start: Date(timeIntervalSince1970: record.start), end: Date(timeIntervalSince1970: record.end),
                           durationS: (record.duration * 1000).rounded() / 1000, sizeBytes: record.size, format: record.format.rawValue,
                           url: "/api/v1/chunks/\(record.file)", clockSynchronized: record.clockSynchronized, companions: companions)
    }

    /// A chunk of the catalog or one of its companions (never any other
    /// file), whole or by one `Range`.
    func download(_ name: String, request: HTTPRequest) -> HTTPResponse {
        guard let catalog = service.recorder?.catalog else {
            return error(404, "not_found", "no chunk named \(loggable(name)) in the catalog")
        }
        let file: OpenedFile, contentType: String
        if let record = catalog.all.first(where: { $0.file == name }) {
            do { file = try catalog.open(record) } catch {
                return self.error(410, "gone", "\(record.file) cannot be read any more: \(error)")
            }
            contentType = record.format.mimeType
        } else if let (companion, _) = catalog.companion(named: name) {
            do { file = try catalog.folder.open(companion.file) } catch {
                return self.error(410, "gone", "\(companion.file) cannot be read any more: \(error)")
            }
            contentType = companion.mimeType
        } else {
            return error(404, "not_found", "no chunk or companion named \(loggable(name)) in the catalog")
        }
        let size = UInt64(file.size)
        var info = stat()
        let modified = fstat(file.descriptor, &info) == 0 ? Int(info.st_mtim.tv_sec) : 0
        let modifiedNanos = fstat(file.descriptor, &info) == 0 ? Int(info.st_mtim.tv_nsec) : 0
        // A chunk never changes once catalogued; size and modification time tell a replaced file apart.
        let etag = "\"\(String(size, radix: 16))-\(String(modified, radix: 16))\(String(modifiedNanos, radix: 16))\""
        let lastModified = Self.httpDate(modified)
        var headers: [(String, String)] = [
            ("Content-Type", contentType), ("Accept-Ranges", "bytes"),
            ("Content-Disposition", "attachment; filename=\"\(name)\""), ("Cache-Control", "private, max-age=3600"),
            ("ETag", etag), ("Last-Modified", lastModified),
        ]
        var status = 200
        var offset: UInt64 = 0
        var length = size
        // If-Range: the range only if the client's copy is this one (RFC 9110 section 13.1.5), else the whole file.
        let rangeApplies = request.headers["if-range"].map { $0 == etag || $0 == lastModified } ?? true
        if let range = request.headers["range"], rangeApplies {
            switch Self.byteRange(range, size: size) {
            case .whole:
                break
            case .unsatisfiable:
                return HTTPResponse(status: 416, headers: [("Content-Range", "bytes */\(size)"), ("ETag", etag)])
            case .range(let first, let last):
                status = 206
                offset = first
                length = last - first + 1
                headers.append(("Content-Range", "bytes \(first)-\(last)/\(size)"))
            }
        }
        let start = offset
        return HTTPResponse(status: status, headers: headers, body: .pieces(length: length) { position, count in
            var data = Data(count: count)
            let n = data.withUnsafeMutableBytes { pread(file.descriptor, $0.baseAddress, count, off_t(start + position)) }
            return n > 0 ? data.prefix(n) : nil
        })
    }

    enum ByteRange: Equatable {
        /// No usable range: serve the whole file (RFC 9110 section 14.2: a server may ignore
        /// a Range it does not support, such as several ranges, or one it cannot parse).
        case whole
        /// One valid range that does not overlap the file: 416.
        case unsatisfiable
        case range(UInt64, UInt64)
    }

    /// One `bytes=a-b`, `bytes=a-` or `bytes=-n` range within `size`.
    static func byteRange(_ header: String, size: UInt64) -> ByteRange {
        guard header.hasPrefix("bytes=") else { return .whole }
        let spec = header.dropFirst(6)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let a = spec[..<dash].trimmingCharacters(in: .whitespaces), b = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        let digits = CharacterSet(charactersIn: "0123456789")
        guard a.unicodeScalars.allSatisfy(digits.contains), b.unicodeScalars.allSatisfy(digits.contains), !(a.isEmpty && b.isEmpty) else {
            return .whole
        }
        if a.isEmpty {
            guard let suffix = UInt64(b) else { return .whole }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .range(size - min(suffix, size), size - 1)
        }
        guard let first = UInt64(a) else { return .whole }
        if b.isEmpty { return first < size ? .range(first, size - 1) : .unsatisfiable }
        guard let last = UInt64(b), last >= first else { return .whole }
        return first < size ? .range(first, min(last, size - 1)) : .unsatisfiable
    }

    /// An IMF-fixdate (RFC 9110 section 5.6.7), e.g. "Sun, 06 Nov 1994 08:49:37 GMT".
    static func httpDate(_ seconds: Int) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    // MARK: Settings

    func settingsAnswer() -> SettingsAnswer {
        let tuning = service.recorder?.currentTuning ?? service.configuration.tuning
        return SettingsAnswer(videoFormat: tuning.videoFormat.rawValue, chunkDurationMs: tuning.chunkDurationMs, bufferMaxMb: tuning.bufferMaxMB)
    }

    /// The settings' version: changes whenever any value does, whoever changed it.
    static func version(of settings: SettingsAnswer) -> String {
        let text = "\(settings.videoFormat)|\(settings.chunkDurationMs)|\(settings.bufferMaxMb)"
        var hash: UInt64 = 14_695_981_039_346_656_037
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 1_099_511_628_211 }
        return "\"" + String(hash, radix: 16) + "\""
    }

    func currentSettings() -> HTTPResponse {
        let current = settingsAnswer()
        return json(200, current, headers: [("ETag", Self.version(of: current))])
    }

    /// The API's name for each setting it changes.
    static let settingKeys: [(key: String, field: SettingsField)] = [
        ("video_format", .videoFormat), ("chunk_duration_ms", .chunkDuration), ("buffer_max_mb", .bufferMax),
    ]

    /// Changes settings through the service's one settings path (`RecorderService.apply`, as SIGHUP
    /// and the server's clientConfig do): checked like every source (a value outside the config's
    /// limits is refused with the same reason), applied live, kept for the next start as applied.
    /// Only JSON types are checked here.
    func patchSettings(_ request: HTTPRequest) -> HTTPResponse {
        let current = settingsAnswer()
        let version = Self.version(of: current)
        guard let ifMatch = request.headers["if-match"] else {
            return error(428, "precondition_required", "send If-Match with the ETag of GET /api/v1/settings")
        }
        guard ifMatch == version || ifMatch == "*" else {
            return error(409, "conflict", "the settings changed since you read them (now \(version)); read them again",
                         headers: [("ETag", version)])
        }
        guard let object = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any] else {
            return error(400, "bad_request", "expected a JSON object of settings to change")
        }
        guard service.recorder != nil else { return error(503, "not_recording", "the recorder is not running") }
        var change = SettingsChange()
        for (key, value) in object {
            switch key {
            case "video_format":
                guard let text = value as? String, let format = VideoFormat(rawValue: text) else {
                    return error(422, "invalid_value", "video_format must be one of the allowed values", field: key,
                                 allowed: VideoFormat.allCases.map(\.rawValue))
                }
                change.videoFormat = format
            case "chunk_duration_ms", "buffer_max_mb":
                guard let number = jsonInteger(value) else {
                    return error(422, "invalid_value", "\(key) must be a whole number", field: key)
                }
                if key == "chunk_duration_ms" { change.chunkDurationMs = number } else { change.bufferMaxMB = number }
            default:
                return error(422, "unknown_field", "\(loggable(key)) is not a setting", field: loggable(key),
                             allowed: Self.settingKeys.map(\.key))
            }
        }
        // All or nothing: a refused value changes nothing, so check before applying.
        let checked = SettingsRules.check(change, from: .local("the console"), bounds: service.configuration.server.bounds)
        if let refusal = checked.refused.first {
            let key = Self.settingKeys.first { $0.field == refusal.field }?.key ?? refusal.field.rawValue
            return error(422, "invalid_value", refusal.message(key: key), field: key, allowed: refusal.allowed)
        }
        let outcome = service.apply(change, from: .local("the console from \(request.remoteAddress)"))
        if !outcome.changes.isEmpty {
            logger.notice("console: settings changed from \(request.remoteAddress): \(outcome.changes.joined(separator: ", "))")
        }
        if let notKept = outcome.notKept { logger.error("console: \(notKept)") }
        return currentSettings()
    }

    // MARK: Uploads and servers

    func requestUploads(_ request: HTTPRequest) -> HTTPResponse {
        guard let link = service.link else {
            return error(409, "no_server", "no AllSpark server is configured (server.host) or discovered")
        }
        guard let body = try? ConsoleJSON.decoder.decode(UploadRequest.self, from: request.body) else {
            return error(400, "bad_request", "expected {\"from\": ISO 8601, \"to\": ISO 8601} or {\"ranges\": [{\"from\":…, \"to\":…}, …]}")
        }
        var ranges = body.ranges?.map { ($0.from, $0.to) } ?? []
        if let from = body.from, let to = body.to { ranges.append((from, to)) }
        guard !ranges.isEmpty, ranges.count <= 100 else {
            return error(422, "invalid_value", "give one range (from, to) or up to 100 ranges", field: "ranges")
        }
        for (from, to) in ranges where from >= to {
            return error(422, "invalid_value", "a range's from must be before its to", field: "from")
        }
        let catalog = service.recorder?.catalog
        var accepted: [UploadAccepted.Range] = []
        for (from, to) in ranges {
            let count = catalog?.chunks(from: from.timeIntervalSince1970, to: to.timeIntervalSince1970).count ?? 0
            link.upload(from: from.timeIntervalSince1970, to: to.timeIntervalSince1970, reason: "console request")
            accepted.append(.init(from: from, to: to, chunks: count))
        }
        logger.notice("console: \(ranges.count) range(s) sent to the server's upload queue by \(request.remoteAddress)")
        return json(202, UploadAccepted(accepted: accepted))
    }

    func uploadQueue() -> HTTPResponse {
        guard let link = service.link else {
            return error(409, "no_server", "no AllSpark server is configured (server.host) or discovered")
        }
        return json(200, Self.answer(link.uploadQueue))
    }

    static func answer(_ queue: UploadQueueSnapshot) -> UploadsAnswer {
        UploadsAnswer(
            inFlight: queue.inFlight.map { .init(name: $0.name, reason: $0.reason, attempt: $0.attempt, since: $0.since) },
            waiting: queue.waiting.map { .init(name: $0.name, reason: $0.reason, attempts: $0.attempts) },
            watches: queue.watches.map { .init(from: $0.from, to: $0.to, reason: $0.reason) },
            finished: queue.finished.reversed().map { .init(name: $0.name, ok: $0.ok, at: $0.at, message: $0.message) },
            finishedOkTotal: queue.finishedOK, finishedFailedTotal: queue.finishedFailed)
    }

    func servers() -> HTTPResponse {
        let found = service.discovery?.servers ?? []
        return json(200, found.map { ServerAnswer(name: $0.name, host: $0.host, addresses: $0.addresses, port: $0.port) })
    }

    // MARK: Metrics

    /// Prometheus text format, version 0.0.4: the service's registry, with
    /// what the recorder, the storage and the link keep read into it now.
    func metrics() -> HTTPResponse {
        let s = status()
        let m = service.metrics
        m.gauge("recording", "1 while frames reach the chunks.", s.recording.state == "recording" ? 1 : 0)
        m.counter("frames_captured_total", "Frames captured since the service started.", total: s.recording.framesCaptured)
        m.counter("frames_recorded_total", "Frames written to chunks since the service started.", total: s.recording.framesRecorded)
        m.counter("chunks_recorded_total", "Chunks finished since the service started.", total: s.recording.chunksRecorded)
        m.gauge("storage_chunks", "Chunks in the storage folder.", Double(s.storage.chunks))
        m.gauge("storage_bytes", "Bytes of chunks in the storage folder.", Double(s.storage.bytes))
        m.gauge("storage_buffer_max_bytes", "The ring buffer's size limit.", Double(s.storage.bufferMaxBytes))
        m.gauge("disk_free_bytes", "Free bytes on the storage folder's disk.", s.storage.diskFreeBytes.map(Double.init))
        m.counter("wall_clock_steps_total", "Times the wall clock was set (stepped) while recording since the service started.", total: s.clock.steps)
        m.gauge("wall_clock_synchronized", "1 once the wall clock is synchronised, 0 before; absent where not visible.",
                s.clock.synchronized.map { $0 ? 1 : 0 })
        m.gauge("server_connected", "1 while connected to the AllSpark server.", s.server.state == "connected" ? 1 : 0)
        if let queue = service.link?.uploadQueue {
            m.gauge("uploads_waiting", "Chunks waiting to be uploaded or being uploaded.", Double(queue.waiting.count + (queue.inFlight == nil ? 0 : 1)))
            m.counter("uploads_finished_ok_total", "Uploads the server confirmed since the service started.", total: queue.finishedOK)
            m.counter("uploads_finished_failed_total", "Uploads given up since the service started.", total: queue.finishedFailed)
        }
        m.gauge("uptime_seconds", "Seconds since the console started.", Date().timeIntervalSince(startedAt).rounded())
        m.gauge("degraded", "1 while recording is degraded (the privacy stage behind, frames lost).", s.health.status == "degraded" ? 1 : 0)
        m.gauge("recorded_frames_per_second", "Frames written to chunks per second over the last ~10 s.", s.health.recordedFramesPerSecond)
        m.gauge("process_cpu_percent", "CPU use of the recorder over the last 2 s, in % of one core.", s.health.cpuPercent)
        m.gauge("temperature_celsius", "The hottest thermal zone of the box.", s.health.temperatureCelsius)
        if let stream = s.stream {
            m.gauge("rtsp_listening", "1 while the RTSP stream (stream.rtsp_listen) listens.", stream.state == "listening" ? 1 : 0)
            m.gauge("rtsp_clients", "RTSP clients connected now.", Double(stream.clients.count))
            m.counter("rtsp_clients_refused_total", "RTSP clients refused over stream.max_clients or stream.max_clients_per_address.", total: stream.clientsRefused)
            m.counter("rtsp_frames_total", "Recorded frames handed to the RTSP stream (once, whatever the number of clients).", total: stream.frames)
            m.counter("rtsp_bytes_total", "Bytes of H.264 handed to the RTSP stream (once, whatever the number of clients).", total: stream.bytes)
            m.counter("rtsp_frames_dropped_total", "Frames the RTSP stream dropped because its clients did not read fast enough.", total: stream.framesDropped)
            m.counter("rtsp_clients_closed_stalled_total", "RTSP players closed because they stopped reading for stream.session_timeout_s.", total: stream.clientsClosedStalled)
        }
        if let privacy = s.health.privacy {
            m.gauge("privacy_late_frames_last_minute", "Frames the privacy stage let go late in the last minute.", Double(privacy.lateLastMinute))
            m.gauge("privacy_hidden_share_last_minute", "Share of the picture hidden as unconfirmed in the last minute.", privacy.hiddenShareLastMinute)
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                            body: .data(Data(m.text().utf8)))
    }
}
