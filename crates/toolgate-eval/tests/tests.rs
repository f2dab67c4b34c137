//! toolgate-eval: runs over small datasets, summaries and reports.

mod batches;
mod report;
mod report_run;
mod run;

mod summary {
    use toolgate_eval::Summary;

    #[test]
    fn a_summary_round_trips_through_json() {
        let summary = Summary {
            dataset: "traces.jsonl".into(),
            traces: 2,
            passed: 1,
            failed: 1,
            pass_rate: 0.5,
            score_histogram: vec![1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            ..Summary::default()
        };
        let text = serde_json::to_string(&summary).unwrap();
        assert_eq!(serde_json::from_str::<Summary>(&text).unwrap(), summary);
    }
}
