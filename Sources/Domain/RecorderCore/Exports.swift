// The config (`RecordingTuning.videoFormat`) and the protocol (chunk
// metadata) are spoken in Storage's vocabulary (`VideoFormat`,
// `ChunkRecord`), so whoever uses RecorderCore sees it too.
@_exported import Storage
