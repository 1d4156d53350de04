@testable import RecorderCore

extension ServerSettingsStore {
    /// Keeps `fields` of `tuning` as a server's clientConfig does (through `SettingsKeeper`), with no config file known.
    func save(_ tuning: RecordingTuning, fields: Set<Field> = ServerSettingsStore.original, server: String, at time: Double = 0) throws {
        try keep(SettingsChange(tuning, fields: fields), from: .server(server), now: tuning, fileTuning: nil, at: time)
    }
}
