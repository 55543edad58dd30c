extension QuotaConfiguration {
    /// The bucket of ``youTubeDataAPIv3``.
    public static let youTubeBucket = "youtube"

    /// The YouTube Data API v3: one 10,000-unit daily bucket, reset at midnight Pacific time.
    ///
    /// Costs from Google's quota calculator: `search.list` 100; every other `.list` method 1,
    /// except `captions.list` 50; writes (`insert`, `update`, `delete`, `rate`, `set`, …) 50,
    /// except `videos.insert` 1,600, `captions.insert` 400, `captions.update` 450; and
    /// `captions.download` 200. Endpoints are named `resource.method`. A 304 is refunded for
    /// every method. Unknown methods cost 1.
    public static let youTubeDataAPIv3: QuotaConfiguration = {
        let reads = [
            "activities.list", "channels.list", "channelSections.list", "comments.list", "commentThreads.list",
            "guideCategories.list", "i18nLanguages.list", "i18nRegions.list", "members.list",
            "membershipsLevels.list", "playlistImages.list", "playlistItems.list", "playlists.list",
            "subscriptions.list", "superChatEvents.list", "videoAbuseReportReasons.list", "videoCategories.list",
            "videos.list", "videos.getRating",
        ]
        let writes = [
            "captions.delete", "channelBanners.insert", "channels.update",
            "channelSections.insert", "channelSections.update", "channelSections.delete",
            "comments.insert", "comments.update", "comments.delete", "comments.markAsSpam",
            "comments.setModerationStatus", "commentThreads.insert",
            "playlistImages.insert", "playlistImages.update", "playlistImages.delete",
            "playlistItems.insert", "playlistItems.update", "playlistItems.delete",
            "playlists.insert", "playlists.update", "playlists.delete",
            "subscriptions.insert", "subscriptions.delete", "thumbnails.set",
            "videos.update", "videos.rate", "videos.reportAbuse", "videos.delete",
            "watermarks.set", "watermarks.unset",
        ]
        let special = [
            "search.list": 100, "captions.list": 50, "captions.insert": 400, "captions.update": 450,
            "captions.download": 200, "videos.insert": 1600,
        ]
        var costs: [String: EndpointCost] = [:]
        for method in reads { costs[method] = EndpointCost(bucket: youTubeBucket, units: 1) }
        for method in writes { costs[method] = EndpointCost(bucket: youTubeBucket, units: 50) }
        for (method, units) in special { costs[method] = EndpointCost(bucket: youTubeBucket, units: units) }
        return QuotaConfiguration(
            bucketLimits: [youTubeBucket: 10_000], endpointCosts: costs, defaultBucket: youTubeBucket, defaultCost: 1
        )
    }()
}
